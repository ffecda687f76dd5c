import DiscordEmulator
import DiscordREST
import NIOWebSocket
import TestSupport
import Testing

/// Members with roles, as Discord shows them: on the gateway's message events (`member`, without
/// `user`), never on REST's messages; posting in a forum needs Create Posts there.
@Suite("Discord emulator members", .timeLimit(.minutes(1)))
struct MemberTests {
    @Test func aMembersPostAndEditCarryTheirMemberOnTheGatewayAndNotInREST() async throws {
        try await Harness.withEmulator { emulator, http in
            let role = emulator.createRole(named: "Agents", permissions: 1 << 34)
            let helper = try emulator.addMember(named: "helper", roles: [role])
            try await withGateway(http.endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: http.endpoints.botToken)
                _ = try await gateway.dispatch("READY")
                let post = try emulator.postFAQ(title: "Reset the router", answer: "Hold the button.", as: helper)
                let created = try #require(try await gateway.dispatch("MESSAGE_CREATE")["d"])
                #expect(created["id"]?.stringValue == post && created["author"]?["id"]?.stringValue == helper)
                #expect(created["member"]?["roles"] == [.string(role)] && created["member"]?["user"] == nil)
                #expect(created["member"]?["joined_at"]?.stringValue != nil && created["webhook_id"] == nil)
                try emulator.editMessage(post, inChannel: post, content: "Unplug it.", as: helper)
                let updated = try #require(try await gateway.dispatch("MESSAGE_UPDATE")["d"])
                #expect(updated["content"] == "Unplug it." && updated["member"]?["roles"] == [.string(role)])
                let fetched = try await http.call(.GET, "/channels/\(post)/messages/\(post)")
                #expect(fetched.status == 200 && fetched.json?["author"]?["id"]?.stringValue == helper && fetched.json?["member"] == nil)
                try await gateway.close(.normalClosure)
            }
            let member = try await http.call(.GET, "/guilds/\(http.endpoints.guildID)/members/\(helper)")
            #expect(member.json?["roles"] == [.string(role)] && member.json?["user"]?["id"]?.stringValue == helper)
        }
    }

    /// Only the author edits a message; a member who may not create posts in the forum is refused.
    @Test func editsAreTheAuthorsAndPostingNeedsCreatePosts() async throws {
        try await Harness.withEmulator { emulator, http in
            let stranger = try emulator.addMember(named: "stranger")
            let post = try emulator.postFAQ(title: "Anyone may post", answer: "By default.", as: stranger)
            let edit = #expect(throws: DiscordFailure.self) { try emulator.editMessage(post, inChannel: post, content: "x", as: http.endpoints.agentUserID) }
            #expect(edit?.code == 50005)
            // `@everyone` denied Create Posts (Send Messages) in the forum.
            try emulator.setOverwrite(on: emulator.faqChannelID, for: http.endpoints.guildID, deny: 1 << 11)
            let refused = #expect(throws: DiscordFailure.self) { try emulator.postFAQ(title: "Not now", answer: "No.", as: stranger) }
            #expect(refused?.status == 403 && refused?.code == 50013)
            #expect(try emulator.permissions(of: stranger, in: emulator.faqChannelID) & (1 << 11) == 0)
            // The owner holds everything, overwrites or not.
            #expect(try emulator.postFAQ(title: "Still", answer: "Yes.").isEmpty == false)
            let forum = try await http.call(.GET, "/channels/\(emulator.faqChannelID)")
            #expect(forum.json?["permission_overwrites"] == [["id": .string(http.endpoints.guildID), "type": 0, "allow": "0", "deny": "2048"]])
        }
    }
}
