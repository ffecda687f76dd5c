import DiscordEmulator
import DiscordGateway
import DiscordREST
import Foundation
import HTTPTypes
import HummingbirdTesting
import TestSupport
import Testing
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

/// The app key ships inside every app: with it alone, nobody takes a conversation, and nobody
/// hears one after their token ended.
@Suite("Claims and the streams of ended tokens")
struct ClaimTests {
    static let appKey: HTTPFields = [.init("X-App-Key")!: "test-app-key"]

    /// An agent deleted the user's thread: nothing of the conversation is left in Discord, but the
    /// id was used, so the app key alone does not open it (the mirror and a replay still hold it).
    @Test func anIdWhoseThreadWasDeletedIsNotFreeToClaim() async throws {
        try await withServer { server in
            let owner = try await server.session(#"{"userId":"deleted-thread-user"}"#)
            #expect(try await server.send("my card number is in this thread", token: owner.token).status == .created)
            let thread = try #require(try await server.thread(of: owner.userId))
            try server.emulator.deleteThread(thread)
            // The deletion as the gateway daemon hands it over.
            #expect(try await server.forward(try MirrorTests.events([.threadDeleted(threadID: thread)])).status == .ok)
            try await server.settled()
            try #require(try await server.store.user(UserID(owner.userId)!)?.threadID == nil, "the deletion reached the store")

            let stranger = try await server.request(.post, "/v1/session", headers: Self.appKey, json: #"{"userId":"deleted-thread-user"}"#)
            #expect(stranger.status == .conflict)
            #expect(stranger.errorCode == "user_claimed")
            // The owner keeps their session.
            #expect(try await server.request(.get, "/v1/messages", token: owner.token).status == .ok)
        }
    }

    /// A token used for one request makes the id used, even with nothing else done.
    @Test func anIdWhoseTokenWasUsedIsNotFreeToClaim() async throws {
        try await withServer { server in
            let owner = try await server.session(#"{"userId":"quiet-user"}"#)
            #expect(try await server.request(.get, "/v1/unread", token: owner.token).status == .ok)
            let stranger = try await server.request(.post, "/v1/session", headers: Self.appKey, json: #"{"userId":"quiet-user"}"#)
            #expect(stranger.status == .conflict)
            // Signed out of every session, it stays taken.
            #expect(try await server.request(.delete, "/v1/session", token: owner.token).status == .noContent)
            let later = try await server.request(.post, "/v1/session", headers: Self.appKey, json: #"{"userId":"quiet-user"}"#)
            #expect(later.status == .conflict)
        }
    }

    /// The reference system's thread of a legacy-shaped id, found in Discord by its name: with the
    /// legacy routes off and no userHash, a `/v1` session for that id starts a new thread and
    /// never shows the old one.
    @Test func aLegacyThreadIsNotAdoptedByNameOnceTheLegacyRoutesAreOff() async throws {
        try await withServer { server in
            let earlier = try await server.discordClient.startForumThread(
                in: server.discord.forumChannelID,
                DiscordForumThreadCreate(name: "k7q-2mz-9xa", message: DiscordMessageCreate(content: "my address is 1 Main St")))
            let session = try await server.session(#"{"userId":"k7q-2mz-9xa"}"#)
            #expect(try await server.send("hello", token: session.token).status == .created)
            let thread = try #require(try await server.thread(of: "k7q-2mz-9xa"))
            #expect(thread != earlier.channel.id)
            #expect(try await server.messages(token: session.token).map { $0["content"]?.stringValue } == ["hello"])
            #expect(server.emulator.messages(inThread: earlier.channel.id).map(\.content) == ["my address is 1 Main St"])
        }
    }

    /// With the app backend's userHash the old thread is the user's own, and continues.
    @Test func aLegacyThreadIsAdoptedWithTheUserHash() async throws {
        let secret = String(repeating: "s", count: 32)
        try await withServer({ $0.identitySecret = secret }) { server in
            let earlier = try await server.discordClient.startForumThread(
                in: server.discord.forumChannelID,
                DiscordForumThreadCreate(name: "k7q-2mz-9xa", message: DiscordMessageCreate(content: "from before the move")))
            let hash = IdentityVerifier(secret: secret).userHash(for: UserID("k7q-2mz-9xa")!)
            let session = try await server.session(#"{"userId":"k7q-2mz-9xa","userHash":"\#(hash)"}"#)
            #expect(try await server.send("after the move", token: session.token).status == .created)
            #expect(try await server.thread(of: "k7q-2mz-9xa") == earlier.channel.id)
            #expect(server.emulator.threads().count == 1)
        }
    }

    /// Only the reference system's id shape adopts by name, even with the legacy routes on.
    @Test func anIdOfAnotherShapeNeverAdoptsByName() async throws {
        try await withServer({ $0.legacyAPIKey = "legacy-key" }) { server in
            let earlier = try await server.discordClient.startForumThread(
                in: server.discord.forumChannelID,
                DiscordForumThreadCreate(name: "someone-else", message: DiscordMessageCreate(content: "private")))
            let session = try await server.session(#"{"userId":"someone-else"}"#)
            #expect(try await server.send("hello", token: session.token).status == .created)
            #expect(try await server.thread(of: "someone-else") != earlier.channel.id)
        }
    }

    /// An id that has been a `/v1` user stays one after its last session ends: the legacy key
    /// never reads or writes for it.
    @Test func aV1UserStaysOneAfterSigningOut() async throws {
        try await withServer({ $0.legacyAPIKey = "legacy-key" }) { server in
            let legacyKey: HTTPFields = [.init("X-API-Key")!: "legacy-key"]
            let user = try await server.session(#"{"userId":"v1u-ser-xyz"}"#)
            #expect(try await server.send("mine", token: user.token).status == .created)
            #expect(try await server.request(.delete, "/v1/session", token: user.token).status == .noContent)
            let read = try await server.request(.get, "/messages/v1u-ser-xyz", headers: legacyKey)
            #expect(read.status == .forbidden)
            #expect(read.errorCode == "not_a_legacy_user")
            let write = try await server.request(.post, "/new-message", headers: legacyKey, json: #"{"content":"as them","userId":"v1u-ser-xyz"}"#)
            #expect(write.status == .forbidden)
        }
    }

    // MARK: Streams end with their token

    @Test func signingOutEndsTheTokensStreams() async throws {
        try await withServer { server in
            let port = try #require(server.client.port)
            let user = try await server.session()
            let other = try await server.session("{\"userId\":\"\(user.userId)\"}", token: user.token)
            let signedOut = try await EventStreamClient.open(port: port, token: user.token)
            defer { signedOut.close() }
            let staying = try await EventStreamClient.open(port: port, token: other.token)
            defer { staying.close() }
            try await signedOut.next("the first unread count") { $0.name == "unread" }
            try await staying.next("the first unread count") { $0.name == "unread" }

            #expect(try await server.request(.delete, "/v1/session", token: user.token).status == .noContent)
            try await signedOut.ends("the signed-out token's stream ended")
            #expect(signedOut.endedCleanly)
            // The other device's stream stays open and hears what comes next.
            #expect(try await server.send("still here", token: other.token).status == .created)
            try await staying.next("the next message") { $0.name == "message.created" }
            #expect(!staying.ended)
            #expect(signedOut.events(named: "message.created").isEmpty)
        }
    }

    @Test func aTokenEndedByTheEleventhSessionEndsItsStream() async throws {
        try await withServer { server in
            let port = try #require(server.client.port)
            let first = try await server.session()
            let stream = try await EventStreamClient.open(port: port, token: first.token)
            defer { stream.close() }
            try await stream.next("the first unread count") { $0.name == "unread" }
            var latest = first.token
            for _ in 0..<UserRecord.liveTokenLimit {
                latest = try await server.session("{\"userId\":\"\(first.userId)\"}", token: latest).token
            }
            #expect(try await server.request(.get, "/v1/unread", token: first.token).status == .unauthorized)
            try await stream.ends("the ended token's stream ended")
        }
    }

    /// The 11th session ends the oldest token even when the rest of its request fails (here the
    /// device note it must post, Discord refusing it): that token's stream ends all the same.
    /// (Discord answers 400, which is not retried: a 5xx would be retried until the server's
    /// Discord budget ran out, racing the test client's own deadline on a loaded machine.)
    @Test func aTokenEndedByASessionThatFailedAfterwardsEndsItsStream() async throws {
        try await withServer { server in
            let port = try #require(server.client.port)
            let (first, _, _) = try await server.userWithThread()
            let stream = try await EventStreamClient.open(port: port, token: first.token)
            defer { stream.close() }
            try await stream.next("the first unread count") { $0.name == "unread" }
            var latest = first.token
            for _ in 0..<(UserRecord.liveTokenLimit - 1) {
                latest = try await server.session("{\"userId\":\"\(first.userId)\"}", token: latest).token
            }
            server.emulator.injectServerErrors(count: 1_000, status: 400)
            let failed = try await server.request(
                .post, "/v1/session", token: latest, headers: Self.appKey,
                json: #"{"userId":"\#(first.userId)","installation":{"appVersion":"9.9.9"}}"#)
            server.emulator.injectServerErrors(count: 0)
            #expect(failed.status.code >= 500)
            #expect(try await server.request(.get, "/v1/unread", token: first.token).status == .unauthorized)
            try await stream.ends("the ended token's stream ended")
        }
    }
}
