import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore

/// One reminder per wait: a note in the thread that pings the desk's role (`DESK_ROLE_ID`; only
/// that role: `allowed_mentions`), once the user has waited `REMIND_AFTER_MINUTES` of the app's
/// support hours (all hours when it has none). The wait is marked reminded in the store before
/// the note goes (so two replicas never both post it), and unmarked when the note could not go.
struct ConversationReminders: Sendable {
    let store: any ConversationRecords & UserRecords
    let discord: DiscordClient<AnyClock>
    let catalog: AppCatalog
    /// The desk's role, pinged by the reminder; nil: the note pings nobody.
    let roleID: String?
    let metrics: ServerMetrics
    let logger: Logger

    /// How far ahead of now support hours are read for a reminder's date.
    static let horizon: TimeInterval = 15 * 86_400

    /// When each wait's reminder is due: `after` of support time since the wait began.
    func dueDates(of waits: [ConversationRecord], after: Duration, now: Date) -> [(ConversationRecord, Date)] {
        let seconds = after / .seconds(1)
        var timelines: [AppID: SupportHours.Timeline] = [:]
        return waits.compactMap { conversation in
            guard let since = conversation.waitingSince else { return nil }
            guard let hours = catalog.app(of: conversation.owner)?.supportHours else { return (conversation, since.addingTimeInterval(seconds)) }
            let app = conversation.owner.app
            if timelines[app] == nil {
                let earliest = waits.filter { $0.owner.app == app }.compactMap(\.waitingSince).min() ?? since
                timelines[app] = hours.timeline(from: earliest, to: now.addingTimeInterval(Self.horizon))
            }
            // Past the hours read: looked at again then.
            let due = timelines[app]?.date(afterOpen: seconds, from: since) ?? now.addingTimeInterval(Self.horizon)
            return (conversation, due)
        }
    }

    /// Reminds support of `conversation`'s wait, once.
    func remind(_ conversation: ConversationRecord, at now: Date) async throws {
        // The user's thread now (a first message is noted in the placeholder of a thread not made yet).
        let current = try await store.user(conversation.owner)?.threadID.flatMap { Snowflake($0) }
        guard let since = conversation.waitingSince else { return }
        // No thread to remind in yet (its creation is failing): the round tries again later.
        guard let thread = current else { throw NoThreadYet() }
        guard try await store.markConversationReminded(conversation.id, waitingSince: since, at: now) else { return }
        let text = Self.text(waitingSince: since, role: roleID)
        let nonce = ThreadNotes.nonce("reminder", id: conversation.owner, String(conversation.id), String(Int(since.timeIntervalSince1970)))
        do {
            _ = try await discord.createMessage(
                in: thread.description,
                DiscordMessageCreate(content: text, nonce: nonce, allowedMentions: roleID.map { .only(role: $0) } ?? .none))
            metrics.lifecycle.reminders(app: conversation.owner.app)
        } catch {
            try? await store.forgetConversationReminder(conversation.id, at: now)
            throw error
        }
    }

    struct NoThreadYet: Error, CustomStringConvertible {
        var description: String { "the user has no thread yet" }
    }

    /// The reminder: a note (the user never sees it) naming how long the user has waited.
    static func text(waitingSince since: Date, role: String?) -> String {
        let stamp = Int(since.timeIntervalSince1970)
        let mention = role.map { "<@&\($0)> " } ?? ""
        return "\(NoteMarkers.prefixes[0]) ⏰ \(mention)The user has been waiting for a reply since <t:\(stamp):f> (<t:\(stamp):R>)."
    }
}
