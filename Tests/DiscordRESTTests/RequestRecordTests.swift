import DiscordEmulator
import DiscordREST
import Foundation
import Testing

/// Every kind of body DiscordREST sends, as the emulator received it. The fidelity checks
/// (`Tests/fidelity/test_openapi.py`) validate the dump written here against Discord's own
/// request schemas, so a field we misspell or mistype fails there.
@Suite("What DiscordREST puts on the wire")
struct RequestRecordTests {
    @Test func sendsDiscordShapedBodiesAndRecordsThemForTheSchemaCheck() async throws {
        try await withDiscord { emulator, client, endpoints in
            let tag = try #require(emulator.forumTagIDs.first)
            let thread = try await client.startForumThread(
                in: endpoints.forumChannelID,
                DiscordForumThreadCreate(
                    name: "record", autoArchiveDuration: 1440, appliedTags: [tag],
                    message: DiscordMessageCreate(content: "first", nonce: "n-1")))
            let reply = try await client.createMessage(
                in: thread.channel.id,
                .init(content: "second", nonce: "n-2", reference: .init(messageId: thread.message.id)))
            _ = try await client.createMessage(
                in: thread.channel.id,
                .init(content: "with a file", files: [DiscordFile(filename: "a.json", contentType: "application/json", data: Data("{}".utf8))]))
            _ = try await client.modifyThread(thread.channel.id, archived: false)
            try await client.addReaction("✅", to: reply.id, in: thread.channel.id)

            let recorded = emulator.recordedRequests
            let threadBody = try #require(recorded.first { $0.route == "/channels/{channel_id}/threads" }?.body)
            #expect(threadBody["applied_tags"] == .array([.string(tag)]))
            #expect(threadBody["message"]?["allowed_mentions"] == ["parse": []])
            #expect(threadBody["message"]?["enforce_nonce"] == true)
            let posts = recorded.filter { $0.method == "POST" && $0.route == "/channels/{channel_id}/messages" }
            #expect(posts.count == 2)
            #expect(posts[0].body?["message_reference"]?["message_id"] == .string(thread.message.id))
            #expect(posts[1].fileNames == ["a.json"])
            #expect(posts[1].body?["attachments"]?[0] == ["id": "0", "filename": "a.json"])
            #expect(recorded.allSatisfy { $0.status < 400 })

            if let folder = ProcessInfo.processInfo.environment["THREADDESK_FIDELITY_DIR"] {
                let file = URL(fileURLWithPath: folder).appendingPathComponent("swift-client-requests.json")
                try JSONEncoder().encode(recorded).write(to: file)
            }
        }
    }
}
