import DiscordREST
import Foundation
import Logging
import Prometheus
import ThreadDeskCore
import ThreadDeskStore

/// What follows a crash note once the outbox delivered it: the report learns where its note is
/// (a later dSYM edits it), a rule's answer goes to the user under the support voice, listed,
/// streamed and pushed like any reply, and the thread gets the crash tag (unless the crash is ignored).
struct CrashFollowUps: DeliveredNoteListener {
    let store: any UserStore
    let regrouping: CrashRegrouping
    let voice: SupportVoice
    let ingestion: MirrorIngestion
    let catalog: AppCatalog
    /// The crash tag beside the thread's status; nil when status tags are off.
    let status: StatusTags?
    let settings: CrashSettings
    let metrics: ServerMetrics
    let logger: Logger

    func delivered(_ item: OutboxItem, posts: [DiscordMessage], in context: inout UserContext) async {
        do {
            guard var report = try await store.crashReport(note: item.id), let note = posts.first, let thread = Snowflake(note.channelId) else { return }
            (report.noteDiscordID, report.threadID) = (Snowflake(note.id), thread)
            // Where the note is, kept first: a failure after it (the answer's post) loses no edit of it.
            try await store.saveCrashReport(report)
            if let rule = report.followUp, rule.hasPrefix("answer:"), let app = catalog.app(of: item.owner) {
                let fixed = String(rule.dropFirst("answer:".count))
                let posted = try await voice.say(settings.answer(fixedIn: fixed), in: note.channelId, of: app.forumChannelID, as: nil)
                try await ingestion.ingestOwn(posted, record: context.record)
                metrics.crashes.answered.increment()
            }
            report.followUp = nil
            try await store.saveCrashReport(report)
            // A dSYM that came while the note waited (or a symbolication to try again): read now.
            if !report.awaiting.isEmpty, !(try await store.dsymDescriptions(app: item.owner.app, uuids: report.awaiting)).isEmpty {
                report = try await regrouping.readAgain(report) ?? report
            }
            // An ignored crash tags no thread.
            if let status, try await store.crashGroup(app: item.owner.app, number: report.group)?.ignored == false {
                status.crashReported(in: thread)
            }
        } catch {
            logger.warning("Could not finish a crash note's follow-up", metadata: ["user": "\(item.owner.logValue)", "error": "\(error)"])
        }
    }
}
