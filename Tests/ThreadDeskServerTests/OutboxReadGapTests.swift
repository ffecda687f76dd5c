import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskServer
import ThreadDeskStore

/// A read of Discord shows no nonce (Discord keeps none), so a post the outbox made is known in
/// a read only by its alias, kept once Discord's answer comes back. A read in between must not
/// take the post for another message of the user's.
@Suite("The outbox and reads of Discord")
struct OutboxReadGapTests {
    /// Discord's answer to a post is lost (the post is in Discord, its alias not kept); a read of
    /// the thread meanwhile, then the retry the nonce answers with the same post: one message.
    @Test func aReadBetweenAPostAndItsAliasKeepsThePostOnce() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), { $0.discordBudget = .seconds(5) }) { server in
            let user = try await server.session()
            #expect(try await server.send("first", token: user.token).status == .created)
            try await server.settled(driving: clock)
            let thread = try #require(try await server.thread(of: user.userId))
            let posts = server.emulator.counters.requests("POST", "/channels/{channel_id}/messages")
            server.emulator.loseAnswers("POST", "/channels/{channel_id}/messages")
            let accepted = try await server.accept("hello", token: user.token)
            let id = try #require(accepted.json["id"]?.stringValue)
            // The post is in Discord; its answer lost, the delivery waits for its retry on the
            // server's clock, which stands still: the alias is not kept yet.
            try await server.emulator.waitUntil("the post reaches Discord", timeout: .seconds(60)) {
                $0.counters.requests("POST", "/channels/{channel_id}/messages") > posts
                    && $0.messages(inThread: thread).contains { $0.content == "hello" }
            }
            // A read now (no gateway: the thread is read from Discord) sees the post without its nonce.
            let during = try await server.messages(token: user.token)
            #expect(during.filter { $0["content"] == "hello" }.map { $0["id"]?.stringValue } == [id])

            try await server.settled(driving: clock)
            #expect(server.emulator.messages(inThread: thread).filter { $0.content == "hello" }.count == 1)
            let after = try await server.messages(token: user.token)
            #expect(after.map { $0["content"]?.stringValue } == ["first", "hello"])
            #expect(after.last?["id"]?.stringValue == id && after.last?["delivery"] == "sent")
        }
    }
}
