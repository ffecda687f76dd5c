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
        var configuration = DiscordEmulator.Configuration()
        // The answers to clicks below must not be late on a loaded machine (the 3 s are the emulator suite's).
        configuration.interactionResponseWindow = .seconds(600)
        try await withDiscord(emulator: configuration) { emulator, client, endpoints in
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

            // A note with buttons, an edit of it, and the answers to clicks and to a modal's submit.
            func row(sendDisabled: Bool) throws -> DiscordActionRow {
                try DiscordActionRow([
                    try DiscordButton(.primary, label: "Send", customId: "send", disabled: sendDisabled),
                    try DiscordButton(.secondary, label: "Edit", customId: "edit"),
                ])
            }
            let note = try await client.createMessage(
                in: thread.channel.id, .init(content: ":ninja: draft", nonce: "n-3", components: [try row(sendDisabled: false)]))
            _ = try await client.editMessage(note.id, in: thread.channel.id, DiscordMessageEdit(content: ":ninja: draft (2)"))
            let send = try emulator.clickButton(messageID: note.id, inChannel: thread.channel.id, customID: "send")
            try await client.respond(to: send.id, token: send.token, .update(content: ":ninja: sending", components: [try row(sendDisabled: true)]))
            let edit = try emulator.clickButton(messageID: note.id, inChannel: thread.channel.id, customID: "edit")
            let modal = try DiscordModal(
                customId: "edit", title: "Edit the draft",
                inputs: [try DiscordTextInput(customId: "text", label: "Answer", style: .paragraph, value: "Hi", maxLength: 1500)])
            try await client.respond(to: edit.id, token: edit.token, .modal(modal))
            let submit = try emulator.submitModal(interactionID: edit.id, values: ["text": "Hello"])
            try await client.respond(to: submit.id, token: submit.token, .deferredUpdate)
            try await client.editOriginalResponse(
                applicationID: endpoints.applicationID, token: submit.token, DiscordMessageEdit(content: ":ninja: sent", components: []))
            let followUp = try await client.followUp(applicationID: endpoints.applicationID, token: submit.token, "Sent @everyone.", ephemeral: true)
            #expect(followUp.content == "Sent @everyone." && !followUp.mentionEveryone)
            #expect(emulator.interaction(send.id)?.callbackType == 7 && emulator.interaction(edit.id)?.modal?.submitted == true)
            let final = emulator.messages(inThread: thread.channel.id).first { $0.id == note.id }
            #expect(final?.content == ":ninja: sent" && final?.buttons.isEmpty == true)

            let recorded = emulator.recordedRequests
            let threadBody = try #require(recorded.first { $0.route == "/channels/{channel_id}/threads" }?.body)
            #expect(threadBody["applied_tags"] == .array([.string(tag)]))
            #expect(threadBody["message"]?["allowed_mentions"] == ["parse": []])
            #expect(threadBody["message"]?["enforce_nonce"] == true)
            let posts = recorded.filter { $0.method == "POST" && $0.route == "/channels/{channel_id}/messages" }
            #expect(posts.count == 3)
            #expect(posts[2].body?["components"]?[0]?["components"]?[1]?["custom_id"] == "edit")
            let callbacks = recorded.filter { $0.route == "/interactions/{interaction_id}/{interaction_token}/callback" }.compactMap(\.body)
            #expect(callbacks.map { $0["type"]?.intValue } == [7, 9, 6])
            #expect(callbacks[1]["data"]?["title"] == "Edit the draft")
            #expect(recorded.contains { $0.method == "PATCH" && $0.route.hasSuffix("/messages/@original") && $0.body?["components"] == [] })
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
