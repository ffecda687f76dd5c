import Hummingbird
import Prometheus
import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// Diagnostics documents from the app: accepted into the outbox, then posted as a file and a
/// `:ninja:` note summarising it. Both are notes to Discord's eyes, so the user never sees their
/// own diagnostics in the chat.
struct DiagnosticsService: Sendable {
    /// Large documents (from `Request.largeBody` bytes) read and parsed at once; the others are
    /// told to come back, so memory holds a few of them, not one per connection (and one per user
    /// and network: its holders are the upload gate's too).
    let largeBodies: ConcurrencyGate
    let users: UserSerializer
    let intake: OutboxIntake
    let metrics: ServerMetrics
    let now: @Sendable () -> Date

    /// Accepts a diagnostics document for the user's thread (started when it is delivered, if
    /// needed): kept in the outbox with its summary, answered at once. A retry with the same
    /// idempotency key answers the first upload and accepts nothing new.
    /// - Parameters:
    ///   - bytes: The document as the app sent it, posted as a file.
    ///   - document: The same, parsed, for the summary.
    ///   - idempotencyKey: The client's key for this upload, if any.
    ///   - id: The user.
    ///   - address: The client's address, for the limits of starting a thread.
    /// - Throws: `SupportFailure.outboxFull`, `SupportFailure.limitReached` when a thread may not
    ///   be started now, and the store's errors.
    func upload(_ bytes: Data, document: JSON, idempotencyKey: String?, for id: UserID, from address: String) async throws -> DiagnosticsResult {
        let filename = DiagnosticsSummary.filename(at: now())
        let summary = DiagnosticsSummary(filename: filename, byteCount: bytes.count, document: document)
        let key = idempotencyKey ?? UUID().uuidString
        // A key names one upload: the same key on a message is another request, not a reuse.
        let (result, accepted) = try await OutboxIntake.retryingTakenIDs { try await users.withUser(id, idempotencyKey: idempotencyKey.map { "diagnostics:" + $0 }) {
            context -> (DiagnosticsResult, OutboxIntake.Accepted?) in
            if let kept = context.keptResult, let messageID = kept.messageIDs.first, let name = kept.fileName {
                return (DiagnosticsResult(filename: name, size: kept.byteCount ?? 0, messageId: messageID), nil)
            }
            let accepted = try await intake.accept(
                .diagnostics, content: summary.note, files: [OutboxItem.File(filename: filename, contentType: "application/json", bytes: bytes)],
                idempotencyKey: key, shown: false, in: &context, from: address, mayStartThread: true)
            context.result = IdempotentResult(fingerprint: "", messageIDs: [accepted.id.description], fileName: filename, byteCount: bytes.count)
            return (DiagnosticsResult(filename: filename, size: bytes.count, messageId: accepted.id.description), accepted)
        } }
        if let accepted {
            intake.announce(accepted)
            metrics.files.diagnosticsUploaded.increment()
        }
        return result
    }
}
