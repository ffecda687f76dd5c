import DiscordREST
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

extension MirroredMessage {
    /// A Discord message as the mirror keeps it; nil when Discord's ids are not snowflakes. A pure
    /// function of the message and the app's assistant name: however often a message is read
    /// again (catch-up, reconciliation), it is kept the same.
    init?(_ message: DiscordMessage, bot: Snowflake, assistant: AssistantName?, partOf: Snowflake? = nil) {
        guard let id = Snowflake(message.id), let thread = Snowflake(message.channelId) else { return nil }
        let visibility = MessageVisibility(of: message, botUserID: bot.description, assistant: assistant)
        let author = MessageAuthor(of: message, botUserID: bot.description, assistant: assistant)
        let name: String? =
            switch author {
            case .user: nil
            case .support: message.author.globalName ?? message.author.username
            case .assistant: assistant?.name
            }
        self.init(
            id: id, threadID: thread, author: author, authorID: Snowflake(message.author.id), authorUsername: message.author.username,
            authorName: name, type: message.type,
            content: author == .user ? NoteMarkers.userText(posted: message.content) : message.content,
            attachments: message.attachments.compactMap { attachment in
                Snowflake(attachment.id).map {
                    Attachment(
                        id: $0, filename: attachment.filename, size: attachment.size, contentType: attachment.contentType, url: attachment.url,
                        proxyURL: attachment.proxyUrl, width: attachment.width, height: attachment.height)
                }
            },
            replyTo: message.messageReference?.messageId.flatMap { Snowflake($0) }, createdAt: message.timestamp,
            editedAt: message.editedTimestamp, visible: visibility.isVisible, partOf: partOf)
        if author == .user, case .string(let nonce)? = message.nonce { self.nonce = nonce }
    }
}
