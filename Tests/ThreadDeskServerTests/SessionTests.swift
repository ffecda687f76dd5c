import Crypto
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

@Suite("Sessions and authentication")
struct SessionTests {
    @Test func aNewUserGetsAnUnguessableIdAndAToken() async throws {
        try await withServer { server in
            let first = try await server.session()
            let second = try await server.session()
            #expect(first.userId.hasPrefix("u_") && first.userId.count == 28)
            #expect(first.userId != second.userId)
            #expect(first.token.count >= 43)
            let reply = try await server.request(.get, "/v1/messages", token: first.token)
            #expect(reply.status == .ok)
            #expect(reply.json == ["messages": [], "hasMore": false])
            #expect(server.discordPosts == 0)
            // Only the hash of the token is kept.
            let record = try #require(try await server.store.user(UserID(first.userId)!))
            #expect(record.tokenHash == UserToken.hash(first.token))
            #expect(record.tokenHash != first.token)
        }
    }

    @Test func aClaimedIdNeedsItsCurrentToken() async throws {
        try await withServer { server in
            let claimed = try await server.session(#"{"userId":"abc-def-ghi"}"#)
            #expect(claimed.userId == "abc-def-ghi")
            // Once the claim is used (here: a device to push to), the app key alone cannot take it.
            let device = String(repeating: "cd", count: 32)
            #expect(try await server.request(
                .put, "/v1/push-token", token: claimed.token, json: #"{"token":"\#(device)","environment":"development"}"#).status == .noContent)
            let stranger = try await server.request(
                .post, "/v1/session", headers: [.init("X-App-Key")!: "test-app-key"], json: #"{"userId":"abc-def-ghi"}"#)
            #expect(stranger.status == .conflict)
            #expect(stranger.errorCode == "user_claimed")

            let renewed = try await server.session(#"{"userId":"abc-def-ghi"}"#, token: claimed.token)
            #expect(renewed.token != claimed.token)
            #expect(renewed.token.hasPrefix("abc-def-ghi~"))
            // The earlier token stays live (the renewal's answer may have been lost; another
            // device may hold it) until it is signed out.
            #expect(try await server.request(.get, "/v1/messages", token: claimed.token).status == .ok)
            #expect(try await server.request(.delete, "/v1/session", token: claimed.token).status == .noContent)
            #expect(try await server.request(.get, "/v1/messages", token: claimed.token).status == .unauthorized)
            #expect(try await server.request(.get, "/v1/messages", token: renewed.token).status == .ok)
            #expect(try await server.request(.delete, "/v1/session", token: claimed.token).status == .unauthorized)
        }
    }

    /// Without IDENTITY_SECRET the first claim of a client-chosen id owns it; a claim nothing was
    /// done with yet (its answer lost on the way) is replaced by the next, so the id is not lost.
    @Test func aFirstSessionWhoseAnswerWasLostDoesNotLockTheIdOut() async throws {
        try await withServer { server in
            let lost = try await server.session(#"{"userId":"new-user-1"}"#)
            let again = try await server.session(#"{"userId":"new-user-1"}"#)
            #expect(again.userId == "new-user-1" && again.token != lost.token)
            // The replaced claim's token ends: whoever held it sees nothing that comes later.
            #expect(try await server.request(.get, "/v1/messages", token: lost.token).status == .unauthorized)
            #expect(try await server.send("hello", token: again.token).status == .created)
            // Now there is a conversation: a claim without one of its tokens is refused.
            let stranger = try await server.request(
                .post, "/v1/session", headers: [.init("X-App-Key")!: "test-app-key"], json: #"{"userId":"new-user-1"}"#)
            #expect(stranger.status == .conflict)
            #expect(stranger.errorCode == "user_claimed")
            #expect(try await server.messages(token: again.token).count == 1)
        }
    }

    @Test func aUserHoldsSeveralLiveTokensUpToTheLimit() async throws {
        try await withServer({ $0.identitySecret = "backend-secret" }) { server in
            let hash = IdentityVerifier(secret: "backend-secret").userHash(for: UserID("user-7")!)
            // Each device proves the identity and gets its own token; none logs the others out.
            var tokens: [String] = []
            for _ in 0..<UserRecord.liveTokenLimit { tokens.append(try await server.session(#"{"userId":"user-7","userHash":"\#(hash)"}"#).token) }
            for token in tokens { #expect(try await server.request(.get, "/v1/unread", token: token).status == .ok) }
            // One more: the oldest makes way.
            let newest = try await server.session(#"{"userId":"user-7","userHash":"\#(hash)"}"#).token
            #expect(try await server.request(.get, "/v1/unread", token: tokens[0]).status == .unauthorized)
            #expect(try await server.request(.get, "/v1/unread", token: tokens[1]).status == .ok)
            #expect(try await server.request(.get, "/v1/unread", token: newest).status == .ok)
            // A token naming one user never opens another's conversation, whatever follows the `~`.
            let other = try await server.session()
            let forged = "user-7~" + String(other.token.split(separator: "~").last!)
            #expect(try await server.request(.get, "/v1/unread", token: forged).status == .unauthorized)
            #expect(try await server.request(.get, "/v1/unread", token: "user-7~").status == .unauthorized)
            #expect(try await server.request(.get, "/v1/unread", token: "~~~").status == .unauthorized)
        }
    }

    @Test func identityVerificationRequiresTheHMAC() async throws {
        try await withServer({ $0.identitySecret = "backend-secret" }) { server in
            let hash = IdentityVerifier(secret: "backend-secret").userHash(for: UserID("user-42")!)
            let good = try await server.session(#"{"userId":"user-42","userHash":"\#(hash)"}"#)
            #expect(good.userId == "user-42")
            // The app's backend can always reissue, even once claimed.
            let again = try await server.session(#"{"userId":"user-42","userHash":"\#(hash.uppercased())"}"#)
            #expect(again.token != good.token)
            for body in [#"{"userId":"user-42"}"#, #"{"userId":"user-42","userHash":"00ff"}"#, #"{"userId":"user-43","userHash":"\#(hash)"}"#] {
                let reply = try await server.request(.post, "/v1/session", headers: [.init("X-App-Key")!: "test-app-key"], json: body)
                #expect(reply.status == .forbidden)
                #expect(reply.errorCode == "invalid_user_hash")
            }
        }
    }

    @Test func theAppKeyIsRequired() async throws {
        try await withServer { server in
            for key in [nil, "wrong", ""] as [String?] {
                var headers: HTTPFields = [:]
                if let key { headers[.init("X-App-Key")!] = key }
                let reply = try await server.request(.post, "/v1/session", headers: headers, json: "{}")
                #expect(reply.status == .unauthorized)
                #expect(reply.errorCode == "invalid_app_key")
            }
        }
    }

    @Test func everyUserRouteNeedsAValidBearerToken() async throws {
        try await withServer { server in
            let routes: [(HTTPRequest.Method, String)] = [
                (.get, "/v1/messages"), (.post, "/v1/messages"), (.post, "/v1/diagnostics"), (.put, "/v1/installation"),
                (.put, "/v1/push-token"), (.delete, "/v1/push-token"),
            ]
            for (method, path) in routes {
                for token in [nil, "not-a-token", String(repeating: "x", count: 5000)] as [String?] {
                    let reply = try await server.request(method, path, token: token, json: method == .get || method == .delete ? nil : "{}")
                    #expect(reply.status == .unauthorized, "\(method) \(path)")
                    #expect(reply.errorCode == "unauthorized")
                }
            }
            #expect(server.emulator.recordedRequests.isEmpty)
        }
    }

    @Test func oneUsersTokenNeverReachesAnotherUsersThread() async throws {
        try await withServer { server in
            let alice = try await server.session()
            let bob = try await server.session()
            #expect(try await server.send("alice's secret", token: alice.token).status == .created)
            let aliceThread = try #require(try await server.thread(of: alice.userId))
            try server.emulator.replyAsAgent(inThread: aliceThread, content: "for alice only")

            #expect(try await server.messages(token: bob.token).isEmpty)
            #expect(try await server.send("bob here", token: bob.token).status == .created)
            let bobThread = try #require(try await server.thread(of: bob.userId))
            #expect(bobThread != aliceThread)
            let bobSees = try await server.messages(token: bob.token).compactMap { $0["content"]?.stringValue }
            #expect(bobSees == ["bob here"])
            #expect(server.emulator.messages(inThread: aliceThread).map(\.content) == ["alice's secret", "for alice only"])
        }
    }
}
