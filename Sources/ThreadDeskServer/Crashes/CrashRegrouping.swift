import DiscordREST
import Foundation
import Prometheus
import ThreadDeskCore
import ThreadDeskStore

/// A report read again with the dSYMs there are now (one came after it, or a symbolication that
/// failed is tried again): its group (a new signature may make it another's), its detail, and its
/// note in Discord edited in place.
struct CrashRegrouping: Sendable {
    let store: any UserStore
    let symbols: CrashSymbols
    let discord: DiscordClient<AnyClock>
    let metrics: ServerMetrics
    let now: @Sendable () -> Date

    /// Under the owner's lock. Nil when nothing changed, or while the note is not in Discord yet:
    /// its delivery reads the report again then (`CrashFollowUps`), so no edit races the post.
    func readAgain(_ report: CrashReport) async throws -> CrashReport? {
        guard let note = report.noteDiscordID, let thread = report.threadID, let before = CrashReading.decoded(report.detail) else { return nil }
        var reading = try await symbols.read(before.diagnostic, app: report.owner.app)
        reading.ruling = before.ruling
        guard reading.awaiting != before.awaiting || reading.symbols != before.symbols else { return nil }
        let group = try await store.recordCrashGroup(
            app: report.owner.app, signatureHash: reading.signatureHash, signature: reading.signature, kind: reading.kind, title: reading.title,
            version: reading.version, at: report.createdAt)
        var report = report
        (report.group, report.detail, report.awaiting) = (group.number, reading.encoded(), reading.awaiting)
        let counts = try await store.crashCounts(app: report.owner.app, group: group.number, since: now().addingTimeInterval(-CrashService.recent))
        let text = CrashNote(reading: reading, group: group, counts: counts, fileName: CrashService.fileName(of: report)).text
        // Kept as read again only once its note says so: a failed edit leaves it waiting.
        _ = try await discord.editMessage(note.description, in: thread.description, content: text)
        try await store.saveCrashReport(report)
        metrics.crashes.symbolicatedLater.increment()
        return report
    }
}
