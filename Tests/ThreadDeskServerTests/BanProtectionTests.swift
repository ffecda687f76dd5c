import DiscordEmulator
import Foundation
import HTTPTypes
import TestSupport
import Testing
import ThreadDeskServer

/// Discord bans an IP after 10,000 invalid requests in 10 minutes: a refused token must stop
/// the traffic, not repeat the refusal on every request.
@Suite("Protection from Discord's ban", .timeLimit(.minutes(1)))
struct BanProtectionTests {
    @Test func aRefusedTokenStopsAllDiscordTrafficAndReadinessSaysWhy() async throws {
        try await withServer({ $0.discordToken = "a-token-that-was-reset" }) { server in
            #expect(try await server.request(.get, "/ready").status == .ok)
            let user = try await server.session()
            // Accepted and kept: the outbox tries Discord, which refuses the token.
            let first = try await server.send("hello", token: user.token)
            #expect(first.status == .created)
            let refused = server.emulator.counters.invalidRequests
            #expect(refused >= 1)
            for index in 0..<5 {
                #expect(try await server.send("again \(index)", token: user.token).status == .created)
            }
            // Nothing more reached Discord, so nothing more counts toward the ban.
            #expect(server.emulator.counters.invalidRequests == refused)
            let ready = try await server.request(.get, "/ready")
            #expect(ready.status == .serviceUnavailable)
            #expect(ready.errorCode == "discord_unauthorized")
            // The messages wait, none of them lost.
            let listed = try await server.messages(token: user.token)
            #expect(listed.count == 6)
            #expect(listed.allSatisfy { $0["delivery"] == "queued" })
        }
    }
}
