import DiscordREST

/// Who wrote a message, from the app user's point of view.
public enum MessageAuthor: String, Sendable, Codable, Hashable {
    /// The app user: the bot posts on their behalf.
    case user
    /// Anyone else in the thread: the developer or their support team.
    case support
}

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
    /// `🥷` is what Discord's own client sends when an agent types `:ninja:`.
    public static let notePrefixes = [":ninja:", "🥷", "!HiddenMessage"]

    public init(of message: DiscordMessage, botUserID: String) {
        let text = message.content.drop { $0.isWhitespace }
        if Self.notePrefixes.contains(where: { text.hasPrefix($0) }) {
            self = .hidden(.internalNote)
        } else if !Self.conversationTypes.contains(message.type) {
            self = .hidden(.systemType(message.type))
        } else if message.content.isEmpty && message.attachments.isEmpty {
            self = .hidden(.empty)
        } else {
            self = .visible(message.author.id == botUserID ? .user : .support)
        }
    }

    public var isVisible: Bool {
        if case .visible = self { return true }
        return false
    }

    /// Only a visible message from support is worth a push notification.
    public var isSupportReply: Bool { self == .visible(.support) }
}

extension MessageVisibility {
    /// The user's text as the bot posts it: text that begins (after whitespace) with a note
    /// marker — or with backslashes and then one — gets one more backslash in front of the
    /// marker, so Discord neither hides it from its author nor shows it as a note (`\:ninja:`
    /// renders as the literal shortcode). `userText(posted:)` undoes it exactly.
    public static func postable(userText text: String) -> String {
        guard let markerStart = escapableMarker(in: text) else { return text }
        var escaped = text
        escaped.insert("\\", at: markerStart)
        return escaped
    }

    /// What the user wrote, from what the bot posted for them.
    public static func userText(posted content: String) -> String {
        guard let markerStart = escapableMarker(in: content), markerStart > content.startIndex,
            content[content.index(before: markerStart)] == "\\"
        else { return content }
        var text = content
        text.remove(at: text.index(before: markerStart))
        return text
    }

    /// Where the marker begins in text that is whitespace, then backslashes, then a marker.
    private static func escapableMarker(in text: String) -> String.Index? {
        let afterSpace = text.drop { $0.isWhitespace }
        let marker = afterSpace.drop { $0 == "\\" }
        return notePrefixes.contains { marker.hasPrefix($0) } ? marker.startIndex : nil
    }
}
