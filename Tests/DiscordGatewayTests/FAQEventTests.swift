import DiscordGateway
import DiscordREST
import Foundation
import Testing

/// The FAQ forum's posts reach the server as events of their own, beside the support forum's, and
/// cross the daemon → server contract without changing its version.
@Suite("FAQ forum events")
struct FAQEventTests {
    static func message(id: String, channel: String, content: String) -> JSON {
        [
            "id": .string(id), "channel_id": .string(channel), "content": .string(content), "timestamp": "2026-11-25T10:00:00.000000+00:00",
            "edited_timestamp": nil, "type": 0, "attachments": [], "mention_everyone": false, "mentions": [],
            "author": ["id": "5", "username": "agent", "discriminator": "0"],
        ]
    }

    @Test func postsStartersEditsAndDeletesOfTheFAQForumBecomeEvents() async throws {
        let filter = ForumEventFilter(forumID: "1", faqForumID: "2", discord: nil)
        let thread: JSON = ["id": "10", "parent_id": "2", "name": "Reset the router", "applied_tags": ["7"], "type": 11]
        let created = await filter.events(for: "THREAD_CREATE", data: thread)
        #expect(created == [.faqPost(threadID: "10", title: "Reset the router", tagIDs: ["7"])])
        // The starter (its id is the thread's), created and edited: the answer.
        let starter = await filter.events(for: "MESSAGE_CREATE", data: Self.message(id: "10", channel: "10", content: "Hold it."))
        guard case .faqStarter(let message)? = starter.first else {
            Issue.record("no starter event: \(starter)")
            return
        }
        #expect(message.content == "Hold it.")
        let edited = await filter.events(for: "MESSAGE_UPDATE", data: Self.message(id: "10", channel: "10", content: "Unplug it."))
        guard case .faqStarter(let edit)? = edited.first else {
            Issue.record("no edit event: \(edited)")
            return
        }
        #expect(edit.content == "Unplug it.")
        // An edit Discord sent without the whole message: the server asks REST.
        #expect(await filter.events(for: "MESSAGE_UPDATE", data: ["id": "10", "channel_id": "10"]) == [.faqStarterChanged(threadID: "10")])
        // Another message in the post is no answer, nor forwarded as a support message.
        #expect(await filter.events(for: "MESSAGE_CREATE", data: Self.message(id: "11", channel: "10", content: "thanks")).isEmpty)
        // Renamed (or archived): the post again.
        let renamed: JSON = ["id": "10", "parent_id": "2", "name": "Restart the router", "applied_tags": ["7"], "type": 11]
        #expect(await filter.events(for: "THREAD_UPDATE", data: renamed) == [.faqPost(threadID: "10", title: "Restart the router", tagIDs: ["7"])])
        #expect(await filter.events(for: "THREAD_DELETE", data: ["id": "10", "type": 11]) == [.faqPostDeleted(threadID: "10")])
    }

    /// Who may write answers hangs on the guild's roles and the FAQ forum's overwrites: a change
    /// of either is word to the server; the author's roles ride along with the starter.
    @Test func rolesAndTheFAQForumsOverwritesChangingBecomeAnEvent() async throws {
        let filter = ForumEventFilter(forumID: "1", faqForumID: "2", discord: nil)
        for type in ["GUILD_ROLE_CREATE", "GUILD_ROLE_UPDATE", "GUILD_ROLE_DELETE"] {
            #expect(await filter.events(for: type, data: ["guild_id": "9", "role": ["id": "3"]]) == [.faqAccessChanged])
        }
        #expect(await filter.events(for: "CHANNEL_UPDATE", data: ["id": "2", "type": 15]) == [.faqAccessChanged])
        #expect(await filter.events(for: "CHANNEL_UPDATE", data: ["id": "1", "type": 15]).isEmpty)
        _ = await filter.events(for: "THREAD_CREATE", data: ["id": "10", "parent_id": "2", "name": "Reset", "type": 11])
        var starter = Self.message(id: "10", channel: "10", content: "Hold it.").objectValue ?? [:]
        starter["member"] = ["roles": ["3"], "joined_at": "2026-01-01T00:00:00.000000+00:00"]
        guard case .faqStarter(let message)? = await filter.events(for: "MESSAGE_CREATE", data: .object(starter)).first else {
            Issue.record("no starter event")
            return
        }
        #expect(message.member?.roles == ["3"] && message.member?.user == nil)
        let wire = try JSONEncoder().encode(ForumEventBatch(events: [.faqStarter(message), .faqAccessChanged]))
        let back = try JSONDecoder().decode(ForumEventBatch.self, from: wire)
        #expect(back.events == [.faqStarter(message), .faqAccessChanged] && back.skipped == 0)
        #expect(try JSON.parse(wire)["events"]?[1]?["type"] == "faq.access.changed")
        #expect(await ForumEventFilter(forumID: "1", discord: nil).events(for: "GUILD_ROLE_UPDATE", data: ["guild_id": "9"]).isEmpty)
    }

    @Test func withoutAFAQForumNothingOfItIsForwarded() async {
        let filter = ForumEventFilter(forumID: "1", discord: nil)
        let thread: JSON = ["id": "10", "parent_id": "2", "name": "Reset the router", "type": 11]
        #expect(await filter.events(for: "THREAD_CREATE", data: thread).isEmpty)
        #expect(await filter.events(for: "MESSAGE_CREATE", data: Self.message(id: "10", channel: "10", content: "Hold it.")).isEmpty)
        #expect(await filter.events(for: "THREAD_DELETE", data: ["id": "10", "parent_id": "2"]).isEmpty)
    }

    @Test func theEventsCrossTheWireUnderVersionOne() throws {
        let message = try JSONDecoder.snakeCase.decode(DiscordMessage.self, from: Self.message(id: "10", channel: "10", content: "Hold it.").encoded())
        let events: [ForumEvent] = [
            .faqPost(threadID: "10", title: "Reset", tagIDs: ["7"]), .faqStarter(message), .faqStarterChanged(threadID: "10"),
            .faqPostDeleted(threadID: "10"), .alive,
        ]
        let wire = try JSONEncoder().encode(ForumEventBatch(events: events))
        let back = try JSONDecoder().decode(ForumEventBatch.self, from: wire)
        #expect(back.events == events && back.skipped == 0 && back.version == 1)
        let json = try JSON.parse(wire)
        #expect(json["events"]?[0]?["type"] == "faq.post" && json["events"]?[2]?["type"] == "faq.starter.changed")
    }
}

extension JSONDecoder {
    static var snakeCase: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }
}
