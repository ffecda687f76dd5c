import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOPosix
import TestSupport
import Testing
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

/// Limits per client address hold behind a proxy, for IPv6 clients, and on every route that
/// costs Discord calls or holds server resources.
@Suite("Limits per client address")
struct AddressLimitTests {
    static func session(_ server: Harness, forwardedFor: String) async throws -> HTTPResponse.Status {
        try await QuotaTests.openSession(server, forwardedFor: forwardedFor)
    }

    /// A proxy network given in CIDR notation is believed, like a single address.
    @Test func trustedProxiesTakeNetworks() async throws {
        try await withServer({
            $0.quotas = .init()
            $0.quotas.sessionsPerAddress = QuotaLimit(2, per: .seconds(3600))
            $0.trustedProxies = ["10.0.0.0/8", "127.0.0.0/8", "fd00::/8"]
        }) { (server: Harness) async throws in
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<3 { statuses.append(try await Self.session(server, forwardedFor: "203.0.113.5, 10.1.2.3")) }
            statuses.append(try await Self.session(server, forwardedFor: "203.0.113.6"))
            #expect(statuses == [.created, .created, .tooManyRequests, .created])
        }
    }

    /// One home or phone gets a whole IPv6 /64: its addresses are one client; the next /64 is another.
    @Test func anIPv6ClientIsItsSlash64() async throws {
        try await withServer({
            $0.quotas = .init()
            $0.quotas.sessionsPerAddress = QuotaLimit(2, per: .seconds(3600))
            $0.trustedProxies = ["127.0.0.1"]
        }) { (server: Harness) async throws in
            #expect(try await Self.session(server, forwardedFor: "2001:db8:1:2::1") == .created)
            #expect(try await Self.session(server, forwardedFor: "2001:db8:1:2:ffff:ffff:ffff:9") == .created)
            #expect(try await Self.session(server, forwardedFor: "2001:db8:1:2:aaaa::7") == .tooManyRequests)
            #expect(try await Self.session(server, forwardedFor: "2001:db8:1:3::1") == .created)
            // An IPv4 client seen through an IPv4-mapped address is that IPv4 client.
            #expect(try await Self.session(server, forwardedFor: "198.51.100.7") == .created)
            #expect(try await Self.session(server, forwardedFor: "::ffff:198.51.100.7") == .created)
            #expect(try await Self.session(server, forwardedFor: "198.51.100.7") == .tooManyRequests)
        }
        // A wider prefix makes a whole /48 one client.
        try await withServer({
            $0.quotas = .init()
            $0.quotas.sessionsPerAddress = QuotaLimit(1, per: .seconds(3600))
            $0.trustedProxies = ["127.0.0.1"]
            $0.quotaIPv6PrefixBits = 48
        }) { (server: Harness) async throws in
            #expect(try await Self.session(server, forwardedFor: "2001:db8:1:2::1") == .created)
            #expect(try await Self.session(server, forwardedFor: "2001:db8:1:3::1") == .tooManyRequests)
        }
    }

    /// With the thread budget spent, a send that would have to look for an unrecorded thread in
    /// Discord (a legacy-shaped id while the legacy routes are on) costs Discord nothing.
    @Test func aSpentThreadBudgetRefusesBeforeDiscordIsAsked() async throws {
        try await withServer({
            $0.quotas = .init()
            $0.quotas.threadsPerAddress = QuotaLimit(1, per: .seconds(3600))
            $0.legacyAPIKey = "legacy-key"
        }) { (server: Harness) async throws in
            let first = try await server.session()
            #expect(try await server.send("hello", token: first.token).status == .created)
            let activeThreads = { server.emulator.counters.requests("GET", "/guilds/{guild_id}/threads/active") }
            let before = activeThreads()
            for index in 0..<3 {
                let legacy = try await server.session(#"{"userId":"k7q-2mz-9a\#(index)"}"#)
                let sent = try await server.send("hello", token: legacy.token)
                #expect(sent.status == .tooManyRequests)
            }
            #expect(activeThreads() == before)
            #expect(server.emulator.threads().count == 1)
        }
    }

    /// Device info that changed costs a note in Discord: many users from one address are limited together.
    @Test func installationsAreLimitedPerAddress() async throws {
        try await withServer({
            $0.quotas = .init()
            $0.quotas.installationsPerAddress = QuotaLimit(2, per: .seconds(3600))
        }) { (server: Harness) async throws in
            var statuses: [HTTPResponse.Status] = []
            for index in 0..<3 {
                let user = try await server.session()
                statuses.append(try await server.request(.put, "/v1/installation", token: user.token, json: #"{"appVersion":"1.\#(index)"}"#).status)
            }
            #expect(statuses == [.ok, .ok, .tooManyRequests])
        }
    }

    /// Signing an expired CDN URL anew is a Discord call: limited per address.
    @Test func attachmentRefreshesAreLimitedPerAddress() async throws {
        try await withServer({
            $0.quotas = .init()
            $0.quotas.refreshesPerAddress = QuotaLimit(1, per: .seconds(3600))
        }) { (server: Harness) async throws in
            var downloads: [(token: String, id: String)] = []
            for device in ["ab", "cd"] {
                let (user, thread, _) = try await server.userWithThread(device: String(repeating: device, count: 32))
                let reply = try server.emulator.replyAsAgent(
                    inThread: thread, content: "", attachments: [.init(filename: "fix.png", contentType: "image/png", data: AttachmentTests.png())])
                try await server.settled()
                let id = try await server.messages(token: user.token).first { $0["id"]?.stringValue == reply.id }?["attachments"]?[0]?["id"]?.stringValue
                downloads.append((user.token, try #require(id, "the agent's image in the user's conversation")))
            }
            // A day later every URL has expired: the first download signs anew, the second is over the limit.
            server.emulator.advanceClock(by: 25 * 3600)
            #expect(try await server.request(.get, "/v1/attachments/\(downloads[0].id)", token: downloads[0].token).status == .ok)
            let refused = try await server.request(.get, "/v1/attachments/\(downloads[1].id)", token: downloads[1].token)
            #expect(refused.status == .tooManyRequests)
            #expect(server.emulator.counters.requests("POST", "/attachments/refresh-urls") == 1)
        }
    }

    /// One address cannot hold the process's streams: past its cap, 429.
    @Test func eventStreamsAreCappedPerAddress() async throws {
        try await withServer({ $0.live.streamsPerAddress = 2 }) { (server: Harness) async throws in
            let port = try #require(server.client.port)
            var streams: [EventStreamClient] = []
            var tokens: [String] = []
            defer { for stream in streams { stream.close() } }
            for _ in 0..<3 {
                let user = try await server.session()
                tokens.append(user.token)
                streams.append(try await EventStreamClient.open(port: port, token: user.token))
            }
            #expect(streams.map(\.status) == [200, 200, 429])
            // A stream that ends (its token signed out) gives its place back.
            #expect(try await server.request(.delete, "/v1/session", token: tokens[0]).status == .noContent)
            try await streams[0].ends("the signed-out stream ended")
            try await server.openStreams(1)
            let user = try await server.session()
            let stream = try await EventStreamClient.open(port: port, token: user.token)
            streams.append(stream)
            #expect(stream.status == 200, "a place came free")
        }
    }

    /// Large diagnostics are read a few at a time, whoever sends them: while two large bodies are
    /// arriving (each past 1 MiB, neither finished), a third large one is told to come back (503
    /// `busy`) instead of being kept in memory, a small one goes through, and a slot comes free
    /// when its connection goes. Being told `busy` costs the user none of their diagnostics quota:
    /// the retry it asks for goes through.
    @Test func largeDiagnosticsAreReadAFewAtATime() async throws {
        try await withServer({ $0.quotas.diagnosticsPerUser = QuotaLimit(2, per: .seconds(3600)) }) { (server: Harness) async throws in
            let port = try #require(server.client.port)
            var senders: [any Channel] = []
            // The server reads two large bodies at once (`Request.largeBodiesAtOnce`).
            for _ in 0..<2 {
                let user = try await server.session()
                let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
                let head = "POST /v1/diagnostics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(user.token)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 3000000\r\n\r\n{\"log\":\""
                try await channel.writeAndFlush(ByteBuffer(string: head + String(repeating: "x", count: (1 << 20) + 4096))).get()
                senders.append(channel)
            }
            defer { for channel in senders { channel.close(promise: nil) } }
            let user = try await server.session()
            let large = #"{"log":""# + String(repeating: "y", count: 2 << 20) + #""}"#
            try await eventually("a third large body refused while two arrive") {
                let reply = try await server.request(.post, "/v1/diagnostics", token: user.token, json: large)
                return reply.status == .serviceUnavailable && reply.errorCode == "busy" && reply.headers[.retryAfter] != nil
            }
            // Retried as the answer asks, and turned away again, as often as an app would.
            for _ in 0..<3 {
                #expect(try await server.request(.post, "/v1/diagnostics", token: user.token, json: large).errorCode == "busy")
            }
            #expect(try await server.request(.post, "/v1/diagnostics", token: user.token, json: #"{"battery":80}"#).status == .created)
            for channel in senders { try await channel.close() }
            senders = []
            try await eventually("a large body read once a slot is free") {
                let reply = try await server.request(.post, "/v1/diagnostics", token: user.token, json: large)
                #expect(reply.status != .tooManyRequests, "the busy answers spent the quota")
                return reply.status == .created
            }
            // The quota is two: both went to documents that arrived.
            #expect(try await server.request(.post, "/v1/diagnostics", token: user.token, json: #"{"battery":79}"#).status == .tooManyRequests)
        }
    }

    /// Requests that declare a large body and trickle it hold no slot of the large-upload gate:
    /// a real upload still goes through while they trickle.
    @Test func tricklingUploadsDoNotBlockTheLargeUploadGate() async throws {
        try await withServer({
            $0.attachments.largeUpload = 64 * 1024
            $0.attachments.maxConcurrentLarge = 1
        }) { (server: Harness) async throws in
            let port = try #require(server.client.port)
            var tricklers: [any Channel] = []
            for _ in 0..<2 {
                let user = try await server.session()
                let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
                let head = "POST /v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(user.token)\r\nIdempotency-Key: trickle\r\n"
                    + "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 2000000\r\n\r\n--b\r\n"
                try await channel.writeAndFlush(ByteBuffer(string: head)).get()
                tricklers.append(channel)
            }
            defer { for channel in tricklers { channel.close(promise: nil) } }
            try await eventually("both trickling bodies are being received") {
                try await server.metric("threaddesk_uploads_receiving") == 2
            }
            let (user, _, _) = try await server.userWithThread()
            let sent = try await AttachmentTests.send(
                server, token: user.token, [.init(name: "files", filename: "big.png", contentType: "image/png", data: AttachmentTests.png(extra: 200 * 1024))])
            #expect(sent.status == .created, "\(String(decoding: sent.body, as: UTF8.self))")
        }
    }
}
