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
