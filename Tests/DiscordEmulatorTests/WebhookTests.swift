@testable import DiscordEmulator
import DiscordREST
import Foundation
import Testing

@Suite("Discord emulator webhooks", .timeLimit(.minutes(1)))
struct WebhookTests {
    /// Makes a webhook on the forum; its id and token.
    static func forumWebhook(_ http: RawHTTP, name: String = "ThreadDesk relay") async throws -> (id: String, token: String) {
        let made = try await http.call(.POST, "/channels/\(http.endpoints.forumChannelID)/webhooks", json: ["name": .string(name)])
        try #require(made.status == 200)
        return (try #require(made.json?["id"]?.stringValue), try #require(made.json?["token"]?.stringValue))
    }

    @Test func aForumWebhookPostsIntoAThreadAsItselfUnderTheNameGiven() async throws {
        try await Harness.withEmulator { emulator, http in
            let thread = try await http.startThread()
            let made = try await http.call(.POST, "/channels/\(http.endpoints.forumChannelID)/webhooks", json: ["name": "ThreadDesk relay"])
            #expect(made.json?["type"] == 1 && made.json?["channel_id"]?.stringValue == http.endpoints.forumChannelID)
            #expect(made.json?["guild_id"]?.stringValue == http.endpoints.guildID && made.json?["avatar"] == .null)
            #expect(made.json?["application_id"]?.stringValue == http.endpoints.applicationID)
            #expect(made.json?["user"]?["id"]?.stringValue == http.endpoints.botUserID)
            let id = try #require(made.json?["id"]?.stringValue)
            let token = try #require(made.json?["token"]?.stringValue)
            #expect(try await http.call(.GET, "/webhooks/\(id)").json?["name"] == "ThreadDesk relay")
            #expect(try await http.call(.GET, "/channels/\(http.endpoints.forumChannelID)/webhooks").json?.arrayValue?.count == 1)
            #expect(emulator.webhooks == [WebhookSnapshot(id: id, channelID: http.endpoints.forumChannelID, name: "ThreadDesk relay")])

            let posted = try await http.call(
                .POST, "/webhooks/\(id)/\(token)?wait=true&thread_id=\(thread)", json: ["content": "From the app", "username": "Jane (app)"],
                bot: false)
            #expect(posted.status == 200 && posted.json?["type"] == 0 && posted.json?["channel_id"]?.stringValue == thread)
            let author = try #require(posted.json?["author"])
            #expect(author["id"]?.stringValue == id && author["username"] == "Jane (app)")
            #expect(author["discriminator"] == "0000" && author["bot"] == true && author["avatar"] == .null)
            #expect(posted.json?["webhook_id"]?.stringValue == id)
            #expect(posted.json?["application_id"]?.stringValue == http.endpoints.applicationID)

            let quiet = try await http.call(.POST, "/webhooks/\(id)/\(token)?thread_id=\(thread)", json: ["content": "No wait"], bot: false)
            #expect(quiet.status == 204 && quiet.json == JSON?.none)
            let messages = emulator.messages(inThread: thread)
            #expect(messages.map(\.content) == ["hello", "From the app", "No wait"])
            #expect(messages.map(\.authorName) == ["ThreadDesk", "Jane (app)", "ThreadDesk relay"])
            #expect(messages.map(\.webhookID) == [nil, id, id])
            #expect(emulator.counters.webhookExecutions == 2)
        }
    }

    @Test func intoAnArchivedThreadItReopensItAndALockedOneRefuses() async throws {
        try await Harness.withEmulator { emulator, http in
            let thread = try await http.startThread()
            let (id, token) = try await Self.forumWebhook(http)
            try emulator.archiveThread(thread)
            let reopened = try await http.call(.POST, "/webhooks/\(id)/\(token)?wait=true&thread_id=\(thread)", json: ["content": "Back"], bot: false)
            #expect(reopened.status == 200)
            #expect(emulator.threads().first { $0.id == thread }?.archived == false)
            try emulator.lockThread(thread)
            let refused = try await http.call(.POST, "/webhooks/\(id)/\(token)?wait=true&thread_id=\(thread)", json: ["content": "No"], bot: false)
            #expect(refused.status == 403 && refused.code == 160005)
            #expect(emulator.counters.webhookExecutions == 1)
        }
    }

    @Test func aForumWebhookNeedsAThreadOfItsForumOrANewPostWithTagsGivenAsNumbers() async throws {
        try await Harness.withEmulator { emulator, http in
            let (id, token) = try await Self.forumWebhook(http)
            let nowhere = try await http.call(.POST, "/webhooks/\(id)/\(token)", json: ["content": "x"], bot: false)
            #expect(nowhere.status == 400 && nowhere.code == 220001)
            let unknown = try await http.call(.POST, "/webhooks/\(id)/\(token)?thread_id=\(http.endpoints.forumChannelID)", json: ["content": "x"], bot: false)
            #expect(unknown.status == 404 && unknown.code == 10003)
            let tag = try #require(emulator.forumTagIDs.first)
            let both = try await http.call(
                .POST, "/webhooks/\(id)/\(token)?thread_id=\(http.endpoints.forumChannelID)", json: ["content": "x", "thread_name": "y"], bot: false)
            #expect(both.status == 400 && both.code == 220002)
            // The tag id as a JSON number, as stock libraries send ids: read exactly, past 2^53.
            let post = try await http.call(
                .POST, "/webhooks/\(id)/\(token)?wait=true",
                body: #"{"content": "A new post", "thread_name": "From a webhook", "applied_tags": [\#(tag)]}"#, bot: false)
            #expect(post.status == 200 && post.json?["author"]?["id"]?.stringValue == id)
            let created = try #require(emulator.threads().first { $0.name == "From a webhook" })
            #expect(created.appliedTags == [tag] && created.id == post.json?["channel_id"]?.stringValue)
        }
    }

    @Test func numberTypedIDsInBodiesAreAcceptedLikeStrings() async throws {
        try await Harness.withEmulator { emulator, http in
            let tags = emulator.forumTagIDs
            let forum = http.endpoints.forumChannelID
            let started = try await http.call(
                .POST, "/channels/\(forum)/threads",
                body: #"{"name": "numbers", "applied_tags": [\#(tags[0])], "message": {"content": "hi"}}"#)
            #expect(started.status == 201 && started.json?["applied_tags"] == [.string(tags[0])])
            let thread = try #require(started.json?["id"]?.stringValue)
            let patched = try await http.call(.PATCH, "/channels/\(thread)", body: #"{"applied_tags": [\#(tags[1]), "\#(tags[0])"]}"#)
            #expect(patched.status == 200 && patched.json?["applied_tags"] == [.string(tags[1]), .string(tags[0])])
            // A reply to the starter message (whose id is the thread's), and a user to ping, by number.
            let reply = try await http.call(
                .POST, "/channels/\(thread)/messages",
                body: #"{"content": "<@\#(http.endpoints.agentUserID)> re", "message_reference": {"message_id": \#(thread)}, "allowed_mentions": {"users": [\#(http.endpoints.agentUserID)]}}"#)
            #expect(reply.status == 200 && reply.json?["referenced_message"]?["id"]?.stringValue == thread)
            #expect(reply.json?["mentions"]?[0]?["id"]?.stringValue == http.endpoints.agentUserID)
        }
    }

    @Test func namesTokensAndDeletionAreCheckedAsDiscordChecksThem() async throws {
        try await Harness.withEmulator { emulator, http in
            let forum = http.endpoints.forumChannelID
            for name in ["My Discord relay", "CLYDE", ""] {
                let refused = try await http.call(.POST, "/channels/\(forum)/webhooks", json: ["name": .string(name)])
                #expect(refused.status == 400 && refused.json?["errors"]?["name"] != nil, "\(name)")
            }
            let thread = try await http.startThread()
            let (id, token) = try await Self.forumWebhook(http)
            let clyde = try await http.call(.POST, "/webhooks/\(id)/\(token)?thread_id=\(thread)", json: ["content": "x", "username": "clyde"], bot: false)
            #expect(clyde.status == 400 && clyde.json?["errors"]?["username"] != nil)
            let forged = try await http.call(.POST, "/webhooks/\(id)/not-the-token?thread_id=\(thread)", json: ["content": "x"], bot: false)
            #expect(forged.status == 401 && forged.code == 50027)
            #expect(try await http.call(.GET, "/webhooks/\(id)", bot: false).status == 401)
            #expect(try await http.call(.DELETE, "/webhooks/\(id)").status == 204)
            #expect(try await http.call(.GET, "/webhooks/\(id)").code == 10015)
            let gone = try await http.call(.POST, "/webhooks/\(id)/\(token)?thread_id=\(thread)", json: ["content": "x"], bot: false)
            #expect(gone.status == 404 && gone.code == 10015)
            #expect(emulator.webhooks.isEmpty && emulator.counters.webhookExecutions == 0)
        }
    }
}
