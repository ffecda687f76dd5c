import DiscordREST
import Foundation
import Testing
import ThreadDeskCore
import ThreadDeskWire

@Suite("Visibility rules")
struct MessageVisibilityTests {
    static let bot = "100"

    static func message(_ content: String, type: Int = 0, author: String = "200", attachments: Int = 0) throws -> DiscordMessage {
        let files = (0..<attachments).map {
            #"{"id":"\#(900 + $0)","filename":"f\#($0).png","size":3,"url":"https://cdn/f","proxy_url":"https://media/f"}"#
        }
        let json = #"""
            {"id":"1","channel_id":"2","author":{"id":"\#(author)","username":"u"},"content":\#(try String(decoding: JSONEncoder().encode(content), as: UTF8.self)),
             "timestamp":"2026-11-22T10:00:00.000Z","edited_timestamp":null,"type":\#(type),"attachments":[\#(files.joined(separator: ","))],
             "mention_everyone":false,"mentions":[]}
            """#
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(DiscordMessage.self, from: Data(json.utf8))
    }

    static func webhookPost(named name: String, webhook: Bool = true) throws -> DiscordMessage {
        let id = webhook ? #","webhook_id":"700""# : ""
        let json = #"""
            {"id":"1","channel_id":"2","author":{"id":"700","username":"\#(name)","bot":true},"content":"Try restarting.",
             "timestamp":"2026-11-22T10:00:00.000Z","edited_timestamp":null,"type":0,"attachments":[],"mention_everyone":false,"mentions":[]\#(id)}
            """#
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(DiscordMessage.self, from: Data(json.utf8))
    }

    @Test func aWebhookPostUnderTheAssistantsNameIsTheAssistantsAndAnyOtherIsSupport() throws {
        let assistant = AssistantName("Assistant")
        for name in ["Assistant", " assistant ", "ASSISTANT"] {
            let post = try Self.webhookPost(named: name)
            #expect(MessageAuthor(of: post, botUserID: Self.bot, assistant: assistant) == .assistant)
            #expect(MessageVisibility(of: post, botUserID: Self.bot, assistant: assistant) == .visible(.assistant))
            #expect(MessageVisibility(of: post, botUserID: Self.bot, assistant: assistant).isSupportReply)
        }
        // Another name, no assistant name, or no webhook (a person who calls themselves so): support.
        #expect(MessageAuthor(of: try Self.webhookPost(named: "Ana"), botUserID: Self.bot, assistant: assistant) == .support)
        #expect(MessageAuthor(of: try Self.webhookPost(named: "Assistant"), botUserID: Self.bot, assistant: nil) == .support)
        #expect(MessageAuthor(of: try Self.webhookPost(named: "Assistant", webhook: false), botUserID: Self.bot, assistant: assistant) == .support)
        // The bot's posts stay the user's whatever they are called.
        #expect(MessageAuthor(of: try Self.message("hi", author: Self.bot), botUserID: Self.bot, assistant: assistant) == .user)
    }

    @Test func supportRepliesOfEveryConversationTypeAreVisible() throws {
        for type in [0, 19, 20, 21] {
            #expect(MessageVisibility(of: try Self.message("hi", type: type), botUserID: Self.bot) == .visible(.support))
        }
    }

    @Test func theBotsPostsAreTheUsersOwn() throws {
        #expect(MessageVisibility(of: try Self.message("hi", author: Self.bot), botUserID: Self.bot) == .visible(.user))
        #expect(MessageVisibility(of: try Self.message("hi", author: Self.bot), botUserID: Self.bot).isSupportReply == false)
    }

    @Test(arguments: [
        ":ninja: note", "  :ninja: indented", "\n:ninja:", "!HiddenMessage x", " \t!HiddenMessage", "🥷 typed as :ninja: in Discord", " 🥷",
        // Invisible characters in front hide nothing from the eye: still a note.
        "\u{FEFF}:ninja: behind a byte order mark", "\u{200B}🥷", "\u{200C}\u{200D} :ninja:", "\u{2060}!HiddenMessage", "\u{00AD}:ninja:",
        "🥷🏽 with a skin tone",
    ])
    func notesAreHiddenAndNeverPushed(content: String) throws {
        let visibility = MessageVisibility(of: try Self.message(content), botUserID: Self.bot)
        #expect(visibility == .hidden(.internalNote))
        #expect(!visibility.isSupportReply)
    }

    @Test func aNoteMarkerLaterInTheTextDoesNotHide() throws {
        #expect(MessageVisibility(of: try Self.message("see :ninja: later"), botUserID: Self.bot) == .visible(.support))
    }

    /// The reference system's `type in [0,19,20,21]` tested array indexes: replies (19) never pushed.
    @Test func repliesAreSupportRepliesWorthAPush() throws {
        #expect(MessageVisibility(of: try Self.message("answer", type: 19), botUserID: Self.bot).isSupportReply)
    }

    @Test(arguments: [1, 6, 7, 18, 46])
    func systemMessagesAreHidden(type: Int) throws {
        #expect(MessageVisibility(of: try Self.message("pinned", type: type), botUserID: Self.bot) == .hidden(.systemType(type)))
    }

    /// The reference system hid attachment-only replies.
    @Test func attachmentOnlyRepliesAreVisible() throws {
        #expect(MessageVisibility(of: try Self.message("", attachments: 1), botUserID: Self.bot) == .visible(.support))
        #expect(MessageVisibility(of: try Self.message(""), botUserID: Self.bot) == .hidden(.empty))
    }

    @Test(arguments: [
        ":ninja: I am a ninja", "🥷", "  !HiddenMessage please", "\\:ninja: already escaped", "\\\\🥷 twice",
        "\u{200B}:ninja: behind a zero-width space", "\u{FEFF}\u{00AD}🥷", "(user wrote) :ninja: typed like the prefix",
        "(user wrote) (user wrote) \\🥷",
    ])
    func theUsersOwnTextThatStartsWithAMarkerIsNeitherHiddenNorANote(text: String) throws {
        let posted = NoteMarkers.postable(userText: text)
        #expect(posted == NoteMarkers.userTextPrefix + text)
        #expect(!NoteMarkers.startsNote(posted))
        #expect(MessageVisibility(of: try Self.message(posted, author: Self.bot), botUserID: Self.bot) == .visible(.user))
        #expect(NoteMarkers.userText(posted: posted) == text)
    }

    /// Before the prefix, a user's marker text was posted with one more backslash: those posts
    /// still read back as what the user wrote.
    @Test func postsEscapedTheOldWayReadBackAsWritten() {
        #expect(NoteMarkers.userText(posted: "\\:ninja: old") == ":ninja: old")
        #expect(NoteMarkers.userText(posted: "\\\\🥷 twice") == "\\🥷 twice")
        #expect(NoteMarkers.userText(posted: "(user wrote) plain") == "(user wrote) plain")
    }

    /// The prefix makes a post longer: a part cut at Discord's limit is cut shorter instead.
    @Test func escapedPartsStillFitInAPost() {
        let text = ":ninja: " + String(repeating: "a", count: 1992) + " " + String(repeating: "b", count: 500)
        let posts = NoteMarkers.posts(ofUserText: text)
        #expect(posts.count == 2)
        #expect(posts.allSatisfy { $0.utf16.count <= MessageText.discordLimit })
        #expect(posts[0].hasPrefix(NoteMarkers.userTextPrefix + ":ninja: "))
        #expect(NoteMarkers.posts(ofUserText: "short") == ["short"])
    }

    @Test(arguments: ["hello", "a :ninja: later", "\\ just a backslash", "", "(user wrote) hello", "\u{200B}hello"])
    func otherTextIsPostedAsItIs(text: String) {
        #expect(NoteMarkers.postable(userText: text) == text)
        #expect(NoteMarkers.userText(posted: text) == text)
    }
}
