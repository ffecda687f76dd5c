import DiscordEmulator
import Foundation
import HTTPTypes
import TestSupport
import Testing
import ThreadDeskServer
import ThreadDeskStore

/// Anyone with the app key can call the API: over a quota a request gets 429 with Retry-After,
/// nothing reaches Discord, and well-behaved users are still served.
@Suite("Quotas", .timeLimit(.minutes(1)))
struct QuotaTests {
    @Test func aBurstOverTheSendQuotaIsRefusedAndNothingReachesDiscord() async throws {
        try await withServer({
            $0.quotas = .init()
            $0.quotas.sendsPerUser = QuotaLimit(3, per: .seconds(60))
        }) { (server: Harness) async throws in
            let noisy = try await server.session()
            for index in 0..<3 { #expect(try await server.send("m\(index)", token: noisy.token).status == .created) }
            let posts = server.discordPosts
            let refused = try await server.send("one too many", token: noisy.token)
            #expect(refused.status == .tooManyRequests)
            #expect(refused.errorCode == "rate_limited")
            #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 >= 1)
            #expect(server.discordPosts == posts)
            #expect(try await server.metric(#"threaddesk_quota_refusals_total{quota="sends per user"}"#) == 1)
            // Someone else on the same server is still served.
            let quiet = try await server.session()
            #expect(try await server.send("hello", token: quiet.token).status == .created)
        }
    }

    @Test func aSessionFloodCannotCreateMoreThreadsThanTheBudget() async throws {
        try await withServer({
            $0.quotas = .init()
            $0.quotas.threadsPerAddress = QuotaLimit(3, per: .seconds(3600))
        }) { (server: Harness) async throws in
            var statuses: [HTTPResponse.Status] = []
            var first: Harness.Session?
            for _ in 0..<8 {
                let user = try await server.session()
                first = first ?? user
                statuses.append(try await server.send("hi", token: user.token).status)
            }
            #expect(statuses.filter { $0 == .created }.count == 3)
            #expect(statuses.filter { $0 == .tooManyRequests }.count == 5)
            #expect(server.emulator.threads().count == 3)
            // A user who has a thread already still writes: no new thread, no charge.
            #expect(try await server.send("still here", token: try #require(first).token).status == .created)
        }
    }

    @Test func sessionsAreCountedPerClientAddressBehindTrustedProxiesOnly() async throws {
        try await withServer({
            $0.quotas = .init()
            $0.quotas.sessionsPerAddress = QuotaLimit(2, per: .seconds(3600))
            $0.trustedProxies = ["127.0.0.1"]
        }) { (server: Harness) async throws in
            #expect(try await Self.openSession(server, forwardedFor: "203.0.113.5, 127.0.0.1") == .created)
            #expect(try await Self.openSession(server, forwardedFor: "203.0.113.5, 127.0.0.1") == .created)
            #expect(try await Self.openSession(server, forwardedFor: "203.0.113.5, 127.0.0.1") == .tooManyRequests)
            #expect(try await Self.openSession(server, forwardedFor: "203.0.113.6, 127.0.0.1") == .created)
        }
        // Without trusted proxies the header is the client's to invent: it is ignored.
        try await withServer({
            $0.quotas = .init()
            $0.quotas.sessionsPerAddress = QuotaLimit(2, per: .seconds(3600))
        }) { (server: Harness) async throws in
            var statuses: [HTTPResponse.Status] = []
            for index in 0..<3 { statuses.append(try await Self.openSession(server, forwardedFor: "198.51.100.\(index)")) }
            #expect(statuses == [.created, .created, .tooManyRequests])
        }
    }

    static func openSession(_ server: Harness, forwardedFor: String) async throws -> HTTPResponse.Status {
        try await server.request(
            .post, "/v1/session", headers: [.init("X-App-Key")!: "test-app-key", .init("X-Forwarded-For")!: forwardedFor], json: "{}"
        ).status
    }
}
