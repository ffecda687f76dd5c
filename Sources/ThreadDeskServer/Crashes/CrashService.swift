import Crypto
import DiscordREST
import Foundation
import Logging
import Prometheus
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// MetricKit payloads from the app: each crash or hang read with the app's dSYMs, grouped by its
/// signature, kept as a report, and shown to support as a note in the user's thread (through the
/// outbox, with the payload attached); a rule on its group answers the user or notes a regression.
struct CrashService: Sendable {
    let users: UserSerializer
    let store: any UserStore
    let symbols: CrashSymbols
    let intake: OutboxIntake
    let ids: MessageIDs
    /// `crash.reported`, recorded with the report.
    let webhooks: WebhookEvents
    let metrics: ServerMetrics
    let logger: Logger
    let now: @Sendable () -> Date

    /// How far back `/crashes` and a note's counts look.
    static let recent: TimeInterval = 7 * 86_400

    /// Accepts one payload for the user: a report and a note per diagnostic; the same payload
    /// again (by its bytes, or the client's idempotency key) answers what the first made.
    /// - Throws: `CrashPayloadError` for anything that is no MetricKit payload with a crash or
    ///   hang; `SupportFailure.outboxFull`, `SupportFailure.limitReached`; the store's errors.
    func upload(_ bytes: Data, idempotencyKey: String?, for id: UserID, from address: String) async throws -> (CrashUploadResult, created: Bool) {
        // A stack overflow's frames nest deeper than any JSON reader goes: its deepest are cut.
        let payload = try MetricKitPayload(json: MetricKitPayload.cuttingDeepStacks(bytes))
        let digest = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        // Read before the user's turn: symbolication runs a process, and nothing of the user's waits on it.
        var readings: [CrashReading] = []
        for diagnostic in payload.diagnostics { readings.append(try await symbols.read(diagnostic, app: id.app)) }
        let key = "crash:" + (idempotencyKey ?? digest)
        let (result, accepted) = try await OutboxIntake.retryingTakenIDs {
            try await users.withUser(id, idempotencyKey: key) { context -> (CrashUploadResult, [OutboxIntake.Accepted]) in
                if let kept = context.keptResult, kept.fingerprint != digest { throw SupportFailure.idempotencyKeyReused }
                var receipts: [CrashReportReceipt] = []
                var accepted: [OutboxIntake.Accepted] = []
                for (index, reading) in readings.enumerated() {
                    let payloadKey = "\(digest)#\(index)"
                    let kept = try await store.crashReport(owner: id, payloadKey: payloadKey)
                    if let kept, try await hasNote(kept) {
                        receipts.append(Self.receipt(kept))
                        continue
                    }
                    // New, or kept by an attempt whose transaction did not commit (its note never
                    // queued): taken now, under the same id.
                    let (report, item) = try await take(
                        reading, payloadKey: payloadKey, bytes: bytes, reportID: kept?.id, for: id, in: &context, from: address)
                    receipts.append(Self.receipt(report))
                    accepted.append(item)
                }
                context.result = IdempotentResult(fingerprint: digest, messageIDs: receipts.map(\.id))
                return (CrashUploadResult(reports: receipts), accepted)
            }
        }
        for item in accepted { intake.announce(item) }
        if !accepted.isEmpty { metrics.crashes.reported.increment(by: Int64(accepted.count)) }
        return (result, !accepted.isEmpty)
    }

    /// Whether a kept report's note is in the outbox or in Discord.
    private func hasNote(_ report: CrashReport) async throws -> Bool {
        if report.noteDiscordID != nil { return true }
        guard let note = report.noteID else { return false }
        return try await store.outboxItem(note) != nil
    }

    /// One diagnostic under the user's turn: its group seen, the rule applied, its note in the
    /// outbox, then the report kept (nothing of the report is kept when the note cannot be: a full
    /// outbox, the thread budget).
    private func take(
        _ reading: CrashReading, payloadKey: String, bytes: Data, reportID: Snowflake?, for id: UserID, in context: inout UserContext,
        from address: String
    ) async throws -> (CrashReport, OutboxIntake.Accepted) {
        let time = now()
        let group = try await store.recordCrashGroup(
            app: id.app, signatureHash: reading.signatureHash, signature: reading.signature, kind: reading.kind, title: reading.title,
            version: reading.version, at: time)
        var reading = reading
        var followUp: String?
        var answered = false
        if let fixed = group.fixedIn, reading.diagnostic.appVersion != nil {
            if VersionOrder.isOlder(reading.version, than: fixed) {
                // Once per user and crash: a user who crashes again on the old version is not told twice.
                if try await store.markCrashAnswered(owner: id, group: group.number, at: time) {
                    (reading.ruling, followUp, answered) = (.answered(fixedIn: fixed), "answer:\(fixed)", true)
                }
            } else {
                // Seen in the version that fixed it, or later: the group is open again, and the
                // agents see it (the rule stays theirs to change).
                try await store.markCrashRegression(app: id.app, number: group.number, version: reading.version)
                reading.ruling = .regression(fixedIn: fixed)
                metrics.crashes.regressions.increment()
            }
        }
        var report = CrashReport(
            id: reportID ?? ids.next(at: time), owner: id, group: group.number, kind: reading.kind, appVersion: reading.version,
            appBuild: reading.build, payloadKey: payloadKey, detail: reading.encoded(), awaiting: reading.awaiting, followUp: followUp,
            createdAt: time)
        // The note counts this report, kept only once the note is accepted.
        var counts = try await store.crashCounts(app: id.app, group: group.number, since: time.addingTimeInterval(-Self.recent))
        let seenBefore = try await store.crashReports(of: id).contains { $0.group == group.number && $0.id != report.id }
        (counts.reports, counts.recentReports) = (counts.reports + 1, counts.recentReports + 1)
        if !seenBefore { (counts.users, counts.recentUsers) = (counts.users + 1, counts.recentUsers + 1) }
        let note = CrashNote(reading: reading, group: group, counts: counts, fileName: Self.fileName(of: report))
        let accepted: OutboxIntake.Accepted
        do {
            accepted = try await intake.accept(
                .crash, content: note.text, files: [OutboxItem.File(filename: Self.fileName(of: report), contentType: "application/json", bytes: bytes)],
                idempotencyKey: payloadKey, shown: false, in: &context, from: address, mayStartThread: true)
        } catch {
            if answered { try? await store.forgetCrashAnswer(owner: id, group: group.number) }
            throw error
        }
        report.noteID = accepted.id
        try await store.saveCrashReport(report)
        webhooks.record(
            .crashReported, app: id.app, owner: id,
            data: WebhookCrashReport(
                id: report.id.description, userId: id.local.rawValue, kind: report.kind, group: "C\(report.group)", appVersion: report.appVersion,
                appBuild: report.appBuild),
            at: time, in: &context)
        return (report, accepted)
    }

    /// The payload's name as the note attaches it.
    static func fileName(of report: CrashReport) -> String { "\(report.kind)-\(report.id).json" }

    static func receipt(_ report: CrashReport) -> CrashReportReceipt {
        CrashReportReceipt(
            id: report.id.description, kind: report.kind, group: "C\(report.group)",
            symbolicated: CrashReading.decoded(report.detail)?.isSymbolicated ?? false)
    }
}
