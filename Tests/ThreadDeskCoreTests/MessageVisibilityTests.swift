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

    @Test func supportRepliesOfEveryConversationTypeAreVisible() throws {
        for type in [0, 19, 20, 21] {
            #expect(MessageVisibility(of: try Self.message("hi", type: type), botUserID: Self.bot) == .visible(.support))
        }
    }

    @Test func theBotsPostsAreTheUsersOwn() throws {
        #expect(MessageVisibility(of: try Self.message("hi", author: Self.bot), botUserID: Self.bot) == .visible(.user))
        #expect(MessageVisibility(of: try Self.message("hi", author: Self.bot), botUserID: Self.bot).isSupportReply == false)
    }

    @Test(arguments: [":ninja: note", "  :ninja: indented", "\n:ninja:", "!HiddenMessage x", " \t!HiddenMessage", "🥷 typed as :ninja: in Discord", " 🥷"])
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

    @Test(arguments: [":ninja: I am a ninja", "🥷", "  !HiddenMessage please", "\\:ninja: already escaped", "\\\\🥷 twice"])
    func theUsersOwnTextThatStartsWithAMarkerIsNeitherHiddenNorANote(text: String) throws {
        let posted = NoteMarkers.postable(userText: text)
        #expect(posted != text)
        #expect(MessageVisibility(of: try Self.message(posted, author: Self.bot), botUserID: Self.bot) == .visible(.user))
        #expect(NoteMarkers.userText(posted: posted) == text)
    }

    @Test(arguments: ["hello", "a :ninja: later", "\\ just a backslash", ""])
    func otherTextIsPostedAsItIs(text: String) {
        #expect(NoteMarkers.postable(userText: text) == text)
        #expect(NoteMarkers.userText(posted: text) == text)
    }
}
