import Foundation
import Logging
import DiscordREST
import ThreadDeskCore
import ThreadDeskStore

/// Whether support is in for an app (its hours, or an agent's `/away on` in one of its threads),
/// and the away message a user of it who writes meanwhile gets: once per interval, as support,
/// silent (the user is in the app: no alert).
struct SupportAvailability: Sendable {
    /// The away message's interval.
    let settings: DeskSettings
    /// Each app's hours and away message.
    let catalog: AppCatalog
    let store: any GlobalValues
    let voice: SupportVoice
    let ingestion: MirrorIngestion
    /// The away message is no answer: the conversation still needs one.
    let status: StatusTags?
    let logger: Logger
    let now: @Sendable () -> Date

    /// The store's note of `/away on` for `app` (on every replica); the default app's is the key
    /// from before there were several.
    static func overrideKey(_ app: AppID) -> String { app == .default ? "desk/away" : "desk/away/\(app)" }

    struct Status: Sendable, Equatable {
        var away: Bool
        /// When support is next in by the hours (nil: in now, or away by hand).
        var nextOpening: Date?
    }

    /// Whether support is away for `app` now, and when it is next in by its hours.
    /// - Throws: The store's errors (the note of `/away on`).
    func status(of app: AppSettings) async throws -> Status {
        if try await store.globalValue(Self.overrideKey(app.id)) == "on" { return Status(away: true, nextOpening: nil) }
        guard let hours = app.supportHours else { return Status(away: false, nextOpening: nil) }
        let date = now()
        return hours.isOpen(at: date) ? Status(away: false, nextOpening: nil) : Status(away: true, nextOpening: hours.nextOpening(after: date))
    }

    /// `/away on|off` for `app`, for every replica.
    /// - Parameter away: Whether support is away whatever the hours say.
    /// - Throws: The store's errors.
    func set(away: Bool, app: AppID) async throws {
        try await store.setGlobalValue(Self.overrideKey(app), to: away ? "on" : nil)
    }

    /// After a user's message went in (the caller holds the user): the away message, when
    /// support is away and the user has not had it within the interval. A failure is logged; the
    /// user's message stands.
    /// - Parameter context: The user's record, held by the caller; notes when the message went.
    func answer(_ context: inout UserContext) async {
        guard let record = context.record, let app = catalog.app(of: record.id), let message = app.awayMessage, let thread = record.threadID
        else { return }
        let date = now()
        if let sent = record.live.awaySentAt, date.timeIntervalSince(sent) < settings.awayInterval / .seconds(1) { return }
        do {
            guard try await status(of: app).away else { return }
            // Silent: listed and streamed, counted unread, no alert.
            let posted = try await voice.say(NoteMarkers.silentPrefixes[1] + " " + message, in: thread, of: app.forumChannelID, as: nil)
            context.record?.live.awaySentAt = date
            try await ingestion.ingestOwn(posted, record: context.record)
            if let status, let id = Snowflake(thread) { status.conversation(in: id, isNow: .needsReply) }
        } catch {
            logger.warning("Could not post the away message", metadata: ["user": "\(record.id.logValue)", "error": "\(error)"])
        }
    }
}
