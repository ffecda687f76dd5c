import DiscordREST
import ThreadDeskWire

/// Who wrote a message, from the app user's point of view (the API's own type).
public typealias MessageAuthor = ThreadDeskWire.MessageAuthor

/// What the app user may see of a Discord message in their thread (the rules of DESIGN.md).
public enum MessageVisibility: Sendable, Hashable {
    case visible(MessageAuthor)
    case hidden(HiddenReason)

    public enum HiddenReason: Sendable, Hashable {
        /// Starts with `:ninja:`, `🥷` or `!HiddenMessage`: an internal note.
        case internalNote
        /// A system message (pins, thread renames, joins…), not conversation.
        case systemType(Int)
        /// Neither text nor files.
        case empty
    }

    /// Discord message types that are conversation: DEFAULT, REPLY, CHAT_INPUT_COMMAND, THREAD_STARTER_MESSAGE.
    public static let conversationTypes: Set<Int> = [0, 19, 20, 21]

    /// - Parameter assistant: The name the app's automatic answers are posted under; nil: none.
    public init(of message: DiscordMessage, botUserID: String, assistant: AssistantName? = nil) {
        if NoteMarkers.startsNote(message.content) {
            self = .hidden(.internalNote)
        } else if !Self.conversationTypes.contains(message.type) {
            self = .hidden(.systemType(message.type))
        } else if message.content.isEmpty && message.attachments.isEmpty {
            self = .hidden(.empty)
        } else {
            self = .visible(MessageAuthor(of: message, botUserID: botUserID, assistant: assistant))
        }
    }

    public var isVisible: Bool {
        if case .visible = self { return true }
        return false
    }

    /// Only a visible message the user did not write (support's, the assistant's) is worth a push notification.
    public var isSupportReply: Bool {
        if case .visible(let author) = self { return author != .user }
        return false
    }
}

extension MessageAuthor {
    /// Who wrote a Discord message of a user's thread: the bot posts for the user; a webhook post
    /// under the app's assistant name is an automatic answer (agents cannot speak under it);
    /// anyone else is support.
    public init(of message: DiscordMessage, botUserID: String, assistant: AssistantName?) {
        if message.author.id == botUserID {
            self = .user
        } else if message.webhookId != nil, let assistant, assistant.matches(message.author.username) {
            self = .assistant
        } else {
            self = .support
        }
    }
}

