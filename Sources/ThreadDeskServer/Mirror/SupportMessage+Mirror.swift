import DiscordREST
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// A message as the widget sees it (the API's own type, shared with the SDK), from the mirror.
extension SupportMessage {
    init(_ message: MirroredMessage) {
        self.init(
            id: message.id.description, author: message.author, authorName: message.authorName,
            content: message.author != .user ? NoteMarkers.shownReply(message.content) : message.content,
            attachments: message.attachments.map {
                Attachment(
                    id: $0.id.description, filename: $0.filename, size: $0.size, contentType: $0.contentType,
                    url: Self.attachmentPath($0.id.description), width: $0.width, height: $0.height)
            },
            createdAt: message.createdAt, editedAt: message.editedAt, replyTo: message.replyTo?.description,
            delivery: message.author != .user ? .sent : message.delivery, deliveryError: message.deliveryError)
    }

}

extension SupportMessage {
    static func attachmentPath(_ id: String) -> String { "/v1/attachments/\(id)" }
}


