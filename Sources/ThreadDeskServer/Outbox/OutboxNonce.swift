import DiscordREST
import ThreadDeskCore
import ThreadDeskStore

/// The posts of an outbox item, each with its nonce (`PostNonce`).
enum OutboxNonce {
    /// Whether the item's text takes several posts (a user's long message: one message in the
    /// mirror, in parts).
    static func isSplit(_ item: OutboxItem) -> Bool {
        item.kind == .message && !(item.content.isEmpty && !item.files.isEmpty) && NoteMarkers.posts(ofUserText: item.content).count > 1
    }

    /// The posts that deliver `item`, in order: a message's text in Discord-sized parts (its files
    /// with the first); a diagnostics report's file in a note, then its summary in another (their
    /// nonces the ones diagnostics always had: the notes are not the user's messages); a crash
    /// report's note with its payload.
    static func posts(of item: OutboxItem) -> [DiscordMessageCreate] {
        let files = item.files.map { DiscordFile(filename: $0.filename, contentType: $0.contentType ?? "application/octet-stream", data: $0.bytes) }
        switch item.kind {
        case .message:
            let parts = item.content.isEmpty && !item.files.isEmpty ? [""] : NoteMarkers.posts(ofUserText: item.content)
            return parts.enumerated().map { index, text in .init(content: text, nonce: PostNonce.make(item.id, part: index), files: index == 0 ? files : []) }
        case .diagnostics:
            return [
                .init(
                    content: ":ninja: 📎 \(item.files.first?.filename ?? "diagnostics.json")",
                    nonce: ThreadNotes.nonce("diagnostics", id: item.owner, item.idempotencyKey), files: files),
                .init(content: item.content, nonce: ThreadNotes.nonce("summary", id: item.owner, item.idempotencyKey)),
            ]
        case .crash:
            // One note: what the crash was, with the whole payload attached.
            return [.init(content: item.content, nonce: ThreadNotes.nonce("crash", id: item.owner, item.idempotencyKey), files: files)]
        case .note:
            return [.init(content: item.content, nonce: ThreadNotes.nonce("note", id: item.owner, item.idempotencyKey))]
        }
    }
}
