import DiscordGateway
import DiscordREST
import Foundation
import Testing

/// A slash command run in Discord reaches the server as an event of its own, from the gateway's
/// payload and across the daemon → server contract.
@Suite("Interaction events")
struct InteractionEventTests {
    /// INTERACTION_CREATE as Discord documents it (a subcommand with a string option).
    static let payload: JSON = [
        "id": "1200000000000000001", "application_id": "1100000000000000001", "type": 2, "token": "aW50ZXJhY3Rpb24tdG9rZW4", "version": 1,
        "guild_id": "1000000000000000001", "channel_id": "1300000000000000001",
        "member": [
            "user": ["id": "1400000000000000001", "username": "ana", "global_name": "Ana", "discriminator": "0"],
            "roles": ["1500000000000000001"], "permissions": "17179869184", "nick": nil,
        ],
        "data": [
            "id": "1600000000000000001", "name": "snippets", "type": 1,
            "options": [["name": "add", "type": 1, "options": [["name": "name", "type": 3, "value": "hi"], ["name": "n", "type": 4, "value": 3]]]],
        ],
    ]

    @Test func aCommandBecomesAnEventAndCrossesToTheServerIntact() async throws {
        let filter = ForumEventFilter(forumID: "1", discord: nil)
        let events = await filter.events(for: "INTERACTION_CREATE", data: Self.payload)
        guard case .interaction(let interaction)? = events.first, events.count == 1 else {
            Issue.record("no interaction event: \(events)")
            return
        }
        #expect(interaction.member?.displayName == "Ana" && interaction.member?.roles == ["1500000000000000001"])
        let add = try #require(interaction.data?.options?.first)
        #expect(add.name == "add" && add.options?.map(\.text) == ["hi", "3"])
        // The token answers the interaction: it never shows in a description (logs).
        #expect(!"\(interaction)".contains(interaction.token))
        let wire = try JSONEncoder().encode(ForumEventBatch(events: events))
        let back = try JSONDecoder().decode(ForumEventBatch.self, from: wire)
        #expect(back.events == events && back.skipped == 0)
    }

    @Test func otherInteractionTypesAreNotForwarded() async {
        let filter = ForumEventFilter(forumID: "1", discord: nil)
        guard case .object(var ping) = Self.payload else { return }
        ping["type"] = 1
        #expect(await filter.events(for: "INTERACTION_CREATE", data: .object(ping)).isEmpty)
        #expect(await filter.events(for: "INTERACTION_CREATE", data: ["type": 2]).isEmpty)
    }
}

/// The stock libraries send snowflakes as JSON numbers: those beyond 2^53 must survive parsing.
@Suite("JSON numbers")
struct JSONNumberTests {
    @Test func aSnowflakeSentAsANumberIsReadExactly() throws {
        let parsed = try JSON.parse(Data(#"{"id": 1234567890123456789, "small": 42, "half": 0.5, "huge": 1e300}"#.utf8))
        #expect(parsed["id"]?.intValue == 1_234_567_890_123_456_789)
        #expect(parsed["id"] == .integer(1_234_567_890_123_456_789))
        #expect(parsed["small"] == .number(42) && parsed["half"] == .number(0.5) && parsed["huge"]?.doubleValue == 1e300)
        #expect(try JSON.parse(Data("9007199254740993".utf8)) == .integer(9_007_199_254_740_993))
        // A float's shortest spelling is not an integer's: what the Double held survives a round trip.
        let float = try JSON.parse(Data("777777777777777777.7".utf8))
        #expect(try JSON.parse(float.encoded()) == float)
        // And written back as it came.
        let written = String(decoding: parsed.encoded(), as: UTF8.self)
        #expect(written.contains(#""id":1234567890123456789"#))
    }
}
