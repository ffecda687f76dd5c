import APNsEmulator
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Logging
import Synchronization
import TestSupport
import Testing
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

@Suite("Bad input gets a clear 4xx and reaches nothing")
struct ValidationTests {
    @Test func messageBodiesAreChecked() async throws {
        try await withServer { server in
            let user = try await server.session()
            let key: HTTPFields = [.init("Idempotency-Key")!: "k"]
            let cases: [(String, Data?, HTTPFields, String, HTTPResponse.Status, String)] = [
                ("empty", Data(#"{"content":"   \n "}"#.utf8), key, "application/json", .badRequest, "empty_message"),
                ("too long", Data(#"{"content":"\#(String(repeating: "a", count: 4001))"}"#.utf8), key, "application/json", .badRequest, "message_too_long"),
                ("no key", Data(#"{"content":"hi"}"#.utf8), [:], "application/json", .badRequest, "missing_idempotency_key"),
                ("bad key", Data(#"{"content":"hi"}"#.utf8), [.init("Idempotency-Key")!: "has space"], "application/json", .badRequest, "invalid_idempotency_key"),
                ("not json", Data("content=hi".utf8), key, "application/x-www-form-urlencoded", .unsupportedMediaType, "unsupported_media_type"),
                ("malformed", Data(#"{"content":"#.utf8), key, "application/json", .badRequest, "invalid_json"),
                ("not utf-8", Data([0x7B, 0x22, 0x63, 0x22, 0x3A, 0x22, 0xFF, 0xFE, 0x22, 0x7D]), key, "application/json", .badRequest, "invalid_encoding"),
                ("wrong type", Data(#"{"content":42}"#.utf8), key, "application/json", .badRequest, "invalid_body"),
                ("missing field", Data(#"{"text":"hi"}"#.utf8), key, "application/json", .badRequest, "invalid_body"),
                ("null", Data("null".utf8), key, "application/json", .badRequest, "invalid_body"),
                ("huge", Data(#"{"content":"\#(String(repeating: "a", count: 70_000))"}"#.utf8), key, "application/json", .contentTooLarge, "body_too_large"),
            ]
            for (name, body, headers, type, status, code) in cases {
                let reply = try await server.request(.post, "/v1/messages", token: user.token, headers: headers, raw: body, contentType: type)
                #expect(reply.status == status, "\(name)")
                #expect(reply.errorCode == code, "\(name)")
                #expect(reply.headers[.contentType]?.hasPrefix("application/json") == true)
            }
            for query in ["?limit=0", "?limit=101", "?limit=ten", "?after=abc", "?before=-1", "?after=123456789012345678901"] {
                let reply = try await server.request(.get, "/v1/messages\(query)", token: user.token)
                #expect(reply.status == .badRequest, "\(query)")
            }
            let sessions = ["[]", #"{"userId":""}"#, #"{"userId":"has space"}"#, #"{"userId":"\#(String(repeating: "a", count: 129))"}"#, #"{"userId":7}"#]
            for body in sessions {
                let reply = try await server.request(.post, "/v1/session", headers: [.init("X-App-Key")!: "test-app-key"], json: body)
                #expect(reply.status == .badRequest, "\(body)")
            }
            #expect(server.emulator.recordedRequests.isEmpty)
        }
    }

    @Test func unknownRoutesAndMethodsAnswerJSON() async throws {
        try await withServer { server in
            let missing = try await server.request(.get, "/v2/whatever")
            #expect(missing.status == .notFound)
            #expect(missing.errorCode == "not_found")
            let method = try await server.request(.patch, "/v1/messages", json: "{}")
            #expect([.notFound, .methodNotAllowed].contains(method.status))
            #expect(method.errorCode != nil)
        }
    }

    @Test func healthReadinessAndMetrics() async throws {
        try await withServer { server in
            #expect(try await server.request(.get, "/health").json == ["status": "ok"])
            #expect(try await server.request(.get, "/ready").json == ["status": "ready"])
            let user = try await server.session()
            _ = try await server.send("count me", token: user.token)
            _ = try await server.request(.get, "/v1/messages?limit=0", token: user.token)
            let metrics = try await server.metricsText()
            #expect(metrics.contains(#"threaddesk_http_requests_total{route="/v1/messages",method="POST",status="201"} 1"#))
            #expect(metrics.contains(#"threaddesk_http_requests_total{route="/v1/messages",method="GET",status="400"} 1"#))
            #expect(metrics.contains(#"threaddesk_discord_requests_total{route="POST /channels/{channel_id}/threads",status="201"} 1"#))
            #expect(metrics.contains("threaddesk_store_duration_seconds_count"))
        }
    }

    /// With several apps `/metrics` names every app and its traffic: without an internal listener
    /// the public one serves it only behind `METRICS_TOKEN`, and not at all without it.
    @Test func metricsAreNeverOpenOnThePublicListener() async throws {
        try await withServer({ $0.metricsToken = nil }) { server in
            let open = try await server.request(.get, "/metrics")
            #expect(open.status == .notFound)
            #expect(try await server.request(.get, "/health").status == .ok)
        }
        try await withServer { server in
            #expect(try await server.request(.get, "/metrics").status == .unauthorized)
            let wrong = try await server.request(.get, "/metrics", headers: [.authorization: "Bearer \(String(repeating: "x", count: 35))"])
            #expect(wrong.status == .unauthorized)
            #expect(wrong.errorCode == "unauthorized")
            #expect(try await server.metricsText().contains("threaddesk_http_requests_total"))
        }
        #expect {
            try ServerConfiguration(environment: ["DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "1", "DISCORD_FORUM_CHANNEL_ID": "2", "APP_KEY": "k", "METRICS_TOKEN": "short"])
        } throws: { error in
            (error as? ConfigurationProblem)?.invalid.contains { $0.hasPrefix("METRICS_TOKEN") } == true
        }
    }

    @Test func aGraphemeWiderThanAPostIsRefusedQuicklyAndTheServerKeepsServing() async throws {
        try await withServer { server in
            let user = try await server.session()
            let zalgo = "e" + String(repeating: "\u{301}", count: 2500)
            let reply = try await server.send(zalgo, token: user.token)
            #expect(reply.status == .badRequest)
            #expect(reply.errorCode == "invalid_text")
            #expect(try await server.request(.get, "/health").status == .ok)
            #expect(server.discordPosts == 0)
        }
    }

    @Test func diagnosticsThatAreNotAnObjectAreRefusedBeforeParsing() async throws {
        try await withServer { server in
            let user = try await server.session()
            // Almost 8 MB of empty objects in an array: refused at its first byte.
            var body = Data("[".utf8)
            body.append(Data(repeating: UInt8(ascii: "{"), count: 1))
            body.append(contentsOf: Array(repeating: Array("},{".utf8), count: 2_700_000).joined())
            body.append(contentsOf: Array("}]".utf8))
            for payload in [body, Data("  \n [1]".utf8), Data("\"text\"".utf8), Data("null".utf8)] {
                let reply = try await server.request(.post, "/v1/diagnostics", token: user.token, raw: payload)
                #expect(reply.status == .badRequest)
                #expect(reply.errorCode == "not_an_object")
            }
            #expect(server.discordPosts == 0)
        }
    }

    @Test func secretsNeverReachTheLogs() async throws {
        let lines = LogCapture()
        try await withServer(logger: lines.logger, gateway: true, { $0.legacyAPIKey = "legacy-secret-key" }) { server in
            server.emulator.injectServerErrors(count: 2, status: 503)
            let user = try await server.session(#"{"userId":"abc-def-ghi"}"#)
            // The first try meets the injected 503s (the log shows it); the retry goes through.
            _ = try await server.send("hello", token: user.token, key: "k1")
            _ = try await server.send("hello", token: user.token, key: "k1")
            _ = try await server.request(.put, "/v1/push-token", token: user.token, json: #"{"token":"\#(String(repeating: "cd", count: 32))","environment":"production"}"#)
            _ = try await server.request(.get, "/v1/messages", token: "wrong-token-value")
            _ = try await server.request(.get, "/messages/abc-def-ghi", headers: [.init("x-api-key")!: "legacy-secret-key"])
            let legacy = #"{"content":"from the old app","userId":"k7q-2mz-9xa"}"#
            _ = try await server.request(.post, "/new-message", headers: [.init("x-api-key")!: "legacy-secret-key"], json: legacy)
            _ = try await server.request(.get, "/messages/k7q-2mz-9xa", headers: [.init("x-api-key")!: "legacy-secret-key"])
            #expect(lines.text.contains("\"route\": /messages/{userId}"), "the access log names the route, not the path")
            // A reply that is pushed: the provider JWT and the device token travel, but not into the logs.
            let thread = try #require(try await server.thread(of: user.userId))
            try server.emulator.replyAsAgent(inThread: thread, content: "pushed")
            try await server.settled()
            try #require(!server.apns.deliveries.isEmpty, "a push")
            #expect(server.apns.deliveries.count == 1)
            let everything = lines.text
            #expect(!everything.isEmpty)
            for secret in [
                server.discord.botToken, user.token, "test-app-key", "legacy-secret-key", String(repeating: "cd", count: 32),
                "wrong-token-value", "test-gateway-secret", "PRIVATE KEY", "eyJhbGciOiJFUzI1NiIs",
                // A legacy user id is that user's only credential on the legacy routes.
                "k7q-2mz-9xa",
            ] {
                #expect(!everything.contains(secret))
            }
        }
    }
}

/// Collects every log line, metadata included, at trace level.
final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])

    var text: String { lines.withLock { $0.joined(separator: "\n") } }

    var logger: Logger {
        Logger(label: "capture") { _ in Handler(capture: self) }
    }

    fileprivate func append(_ line: String) { lines.withLock { $0.append(line) } }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            capture.append("\(event.level) \(event.message) \(all)")
        }
    }
}
