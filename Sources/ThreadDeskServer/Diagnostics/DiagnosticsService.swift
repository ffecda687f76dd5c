import Hummingbird
import Prometheus
import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// Diagnostics documents from the app: posted as a file, then a `:ninja:` note summarising it.
/// Both are notes to Discord's eyes, so the user never sees their own diagnostics in the chat.
struct DiagnosticsService: Sendable {
    /// Large documents (from `Request.largeBody` bytes) read and parsed at once; the others are
    /// told to come back, so memory holds a few of them, not one per connection.
    let largeBodies = ConcurrencyGate(limit: Request.largeBodiesAtOnce)
    let users: UserSerializer
    let discord: DiscordClient<AnyClock>
    let threads: ThreadService
    let ingestion: MirrorIngestion
    let metrics: ServerMetrics
    let now: @Sendable () -> Date

    /// Posts a diagnostics document to the user's thread (starting it if needed) and its summary
    /// note. A retry with the same idempotency key answers the first upload, posting nothing.
    /// - Parameters:
    ///   - bytes: The document as the app sent it, posted as a file.
    ///   - document: The same, parsed, for the summary.
    ///   - idempotencyKey: The client's key for this upload, if any.
    ///   - id: The user.
    ///   - address: The client's address, for the limits of starting a thread.
    /// - Throws: `DiscordError` when Discord refuses or fails, `SupportFailure.limitReached` when
    ///   a thread may not be started now, and the store's errors.
    func upload(_ bytes: Data, document: JSON, idempotencyKey: String?, for id: UserID, from address: String) async throws -> DiagnosticsResult {
        let filename = DiagnosticsSummary.filename(at: now())
        let summary = DiagnosticsSummary(filename: filename, byteCount: bytes.count, document: document)
        let key = idempotencyKey ?? UUID().uuidString
        // A key names one upload: the same key on a message is another request, not a reuse.
        return try await users.withUser(id, idempotencyKey: idempotencyKey.map { "diagnostics:" + $0 }) { context in
            if let kept = context.keptResult, let messageID = kept.messageIDs.first, let name = kept.fileName {
                return DiagnosticsResult(filename: name, size: kept.byteCount ?? 0, messageId: messageID)
            }
            let file = DiscordFile(filename: filename, contentType: "application/json", data: bytes)
            let upload = try await threads.post(
                .init(content: ":ninja: 📎 \(filename)", nonce: ThreadNotes.nonce("diagnostics", id: id, key), files: [file]), in: &context,
                from: address)
            try await ingestion.ingestOwn(upload, record: context.record)
            if let thread = context.record?.threadID {
                let posted = try await discord.createMessage(
                    in: thread, .init(content: summary.note, nonce: ThreadNotes.nonce("summary", id: id, key)))
                try await ingestion.ingestOwn(posted, record: context.record)
            }
            context.result = IdempotentResult(fingerprint: "", messageIDs: [upload.id], fileName: filename, byteCount: bytes.count)
            metrics.diagnosticsUploaded.increment()
            return DiagnosticsResult(filename: filename, size: bytes.count, messageId: upload.id)
        }
    }
}
