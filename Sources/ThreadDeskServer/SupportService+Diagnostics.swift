import DiscordREST
import Foundation
import HTTPTypes
import Prometheus
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

extension SupportService {
    /// Posts the document as a file, then a `:ninja:` note summarising it. Both are notes to
    /// Discord's eyes, so the user never sees their own diagnostics in the chat.
    func uploadDiagnostics(
        _ bytes: Data, document: JSON, idempotencyKey: String?, for id: UserID, from address: String, now: Date = Date()
    )
        async throws -> DiagnosticsResult
    {
        let filename = DiagnosticsSummary.filename(at: now)
        let summary = DiagnosticsSummary(filename: filename, byteCount: bytes.count, document: document)
        let key = idempotencyKey ?? UUID().uuidString
        // A key names one upload: the same key on a message is another request, not a reuse.
        return try await withUser(id, idempotencyKey: idempotencyKey.map { "diagnostics:" + $0 }) { context in
            if let stored = context.storedResponse, let result = try? JSONDecoder().decode(DiagnosticsResult.self, from: stored.body) {
                return result
            }
            let file = DiscordFile(filename: filename, contentType: "application/json", data: bytes)
            let upload = try await post(
                .init(content: ":ninja: 📎 \(filename)", nonce: Self.nonce("diagnostics", id: id, key), files: [file]), in: &context, from: address)
            try await ingestOwn(upload, partOf: nil, context: context)
            if let thread = context.record?.threadID {
                let posted = try await discordCall {
                    try await discord.createMessage(in: thread, .init(content: summary.note, nonce: Self.nonce("summary", id: id, key)))
                }
                try await ingestOwn(posted, partOf: nil, context: context)
            }
            let result = DiagnosticsResult(filename: filename, size: bytes.count, messageId: upload.id)
            context.response = StoredResponse(status: 201, body: try JSONEncoder.api.encode(result), fingerprint: "")
            metrics.diagnosticsUploaded.increment()
            return result
        }
    }
}
