import ThreadDeskWire
import Deadlines
import Logging
import AssistClient
import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// Answers while away (`ASSIST_AUTO=away`): while support is away, a user whose question one FAQ
/// answer covers well gets an answer written from it at once, posted under the assistant's
/// reserved name (author `assistant`: streamed, pushed and counted like support's), once per
/// conversation until an agent replies. The away message still promises a person, the thread
/// still needs a reply, and a note tells the agents what was said.
extension Drafts {
    /// What the model answers when the articles do not answer the question: nothing is sent.
    static let noAnswer = "NO_ANSWER"

    /// `answerWhileAway` within its own deadline; a failure is logged and leaves the draft to come.
    func answeredWhileAway(_ thread: Snowflake, _ owner: UserID, _ newest: Snowflake, app: AppSettings, settings: AssistAppSettings, within: Duration) async
        -> Bool
    {
        guard settings.auto == .away else { return false }
        do {
            return try await Deadline.within(within) { try await answerWhileAway(thread, owner: owner, answering: newest, app: app, settings: settings) }
        } catch {
            parts.logger.notice("An answer while away failed", metadata: ["thread": "\(thread)", "error": "\(error)"])
            return false
        }
    }

    /// Answers the thread's newest user message itself when everything allows it.
    /// - Returns: Whether the assistant answered (then no draft is made for that message).
    func answerWhileAway(_ thread: Snowflake, owner: UserID, answering newest: Snowflake, app: AppSettings, settings: AssistAppSettings) async throws
        -> Bool
    {
        guard settings.auto == .away, let record = try await parts.store.user(owner), record.live.assistAnsweredAt == nil else { return false }
        guard try await parts.away.status(of: app).away else { return false }
        let page = try await parts.store.mirrorPage(thread: thread, .before(nil), limit: DraftPrompt.maxMessages)
        guard let waiting = Self.waitingOn(page.messages, app: app), waiting.id >= newest else { return false }
        let question = Self.question(in: page.messages, app: app)
        guard let best = await parts.faq.book(for: app.id)?.bestMatch(for: question), best.coverage >= settings.autoMinimumMatch else {
            return false
        }
        let deployment = parts.assist.deployment
        let prompt = DraftPrompt(
            .away, app: app.name, conversation: page.messages, matches: [best.answer], installation: record.installation,
            profile: try? await parts.store.profile(of: owner),
            maxCharacters: deployment.maxDraftCharacters, canary: OutputGuard.newCanary())
        let check = OutputGuard(canary: prompt.canary, systemPrompt: prompt.system, maxCharacters: deployment.maxDraftCharacters)
        let text: String
        do {
            text = try await parts.assist.complete(
                AssistRequest(messages: prompt.messages, maxTokens: deployment.maxTokens, temperature: 0.2), purpose: .away, app: app, user: owner,
                asker: Self.asker(record, page.messages, app: app), guard: check)
        } catch {
            // Refused, failed or over budget (counted and logged by the service): a draft may still come.
            return false
        }
        guard !Self.saysNoAnswer(text) else { return false }
        // The guard's text shows every link's address already.
        let said = Self.awayAnswer(text, from: best.answer)
        // Claimed before anything is posted, and kept unless Discord surely took nothing: an answer
        // whose fate is unknown counts as given, so no user ever gets two.
        let claimed: Bool = try await parts.users.withUser(owner) { context in
            // Erased meanwhile, answered by another turn or replica, spoken to since the model
            // wrote, or support is back: nothing goes.
            guard var record = context.record, record.threadID == thread.description, record.live.assistAnsweredAt == nil else { return false }
            let latest = try await parts.store.mirrorPage(thread: thread, .before(nil), limit: 5).messages
            guard Self.waitingOn(latest, app: app)?.id == waiting.id, try await parts.away.status(of: app).away else { return false }
            record.live.assistAnsweredAt = parts.time.now()
            context.record = record
            return true
        }
        guard claimed else { return false }
        var heading = "🤖 Support was away, so the assistant answered the user (still needs a reply):"
        do {
            // Outside the lock: Discord's pace never holds up the user's own messages.
            let posted = try await parts.voice.answer(said, in: thread.description, of: app.forumChannelID)
            // Streamed and pushed like support's reply (the gateway's copy of it would do the same later).
            _ = try? await parts.users.withUser(owner) { context in try await parts.ingestion.ingestOwn(posted, record: context.record) }
            parts.logger.info("The assistant answered while support was away", metadata: ["thread": "\(thread)", "message": "\(posted.id)"])
        } catch {
            parts.logger.warning("An answer while away could not be posted", metadata: ["thread": "\(thread)", "error": "\(error)"])
            guard case .maybeSent = Self.outcome(of: error, at: .posting) else {
                _ = try? await parts.users.withUser(owner) { context in context.record?.live.assistAnsweredAt = nil }
                return false
            }
            heading = "⚠️ Support was away; the assistant's answer may have reached the user (Discord did not answer; look at the thread):"
        }
        // The agents read what was said, and from which answer; the conversation still waits on them.
        var note = DiscordMessageCreate(content: DraftNote.content(heading, text, sources: [best.answer.id]))
        note.nonce = ThreadNotes.nonce("away-answer", id: owner, waiting.id.description)
        do {
            _ = try await parts.discord.createMessage(in: thread.description, note)
        } catch {
            parts.logger.notice("Could not post the note of an away answer", metadata: ["thread": "\(thread)", "error": "\(error)"])
        }
        return true
    }

    /// An agent replied (`reply`, a Discord id): the user is no longer new to the assistant's
    /// budgets, and with `away` the assistant may answer them again the next time support is away.
    /// A reply older than the last answer (a turn that ran late) frees nothing.
    func agentReplied(owner: UserID, reply: Snowflake, away: Bool) async throws {
        func frees(_ live: LiveState) -> Bool { away && live.assistAnsweredAt.map { reply.date > $0 } == true }
        guard let live = try await parts.store.user(owner)?.live, frees(live) || live.agentAnsweredAt == nil else { return }
        try await parts.users.withUser(owner) { context in
            guard var record = context.record, frees(record.live) || record.live.agentAnsweredAt == nil else { return }
            if frees(record.live) { record.live.assistAnsweredAt = nil }
            if record.live.agentAnsweredAt == nil { record.live.agentAnsweredAt = reply.date }
            context.record = record
        }
    }

    /// Whether the model said the articles do not answer: `NO_ANSWER` as asked, or close to it.
    static func saysNoAnswer(_ text: String) -> Bool {
        let upper = text.uppercased()
        let bare = upper.trimmingCharacters(in: .punctuationCharacters.union(.whitespacesAndNewlines))
        return upper.contains(noAnswer) || bare == "NO ANSWER"
    }

    /// What the user asked since support last spoke: what the FAQ is searched with.
    static func question(in messages: [MirroredMessage], app: AppSettings) -> String {
        messages.reversed().prefix { $0.author == .user || ReplyWatch.isAutomatic($0, app: app) }
            .filter { $0.author == .user }.reversed().map(\.content).joined(separator: "\n")
    }

    /// The answer as the user reads it: the model's text, then which help article it came from.
    static func awayAnswer(_ text: String, from article: CuratedAnswer) -> String {
        let label = "\n\n(Automatic answer from the help article \u{201C}\(article.title)\u{201D}. Someone from support will read your message too.)"
        return MessageText.clip(text, limit: MessageText.discordLimit - label.utf16.count) + label
    }
}

extension AssistAppSettings {
    /// Whether the app's threads are watched for who spoke last: for drafts, or for answers while away.
    var watchesReplies: Bool { drafts || auto == .away }
}
