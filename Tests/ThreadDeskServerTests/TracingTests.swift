import APNsEmulator
import DiscordEmulator
import DiscordGateway
import DiscordREST
import NIOCore
import NIOFoundationCompat
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import ServiceLifecycle
import Testing
import TestSupport
import ThreadDeskServer
import ThreadDeskTracing

/// A span as an OTLP/HTTP JSON export carries it.
struct ExportedSpan: Sendable, Hashable, CustomStringConvertible {
    let service: String
    let name: String
    let traceID: String
    let spanID: String
    let parentID: String
    let kind: Int

    var description: String { "\(service) \(name) \(spanID) ← \(parentID.isEmpty ? "root" : parentID)" }
}

/// An OpenTelemetry collector on loopback, as far as tests need one: it takes OTLP/HTTP JSON
/// exports (`POST /v1/traces`) and keeps their spans.
struct SpanReceiver {
    let spans = Watched<[ExportedSpan]>([])

    static func withRunning(_ body: @Sendable (SpanReceiver, _ endpoint: String) async throws -> Void) async throws {
        let receiver = SpanReceiver()
        let port = ListenerPort()
        let router = Router()
        router.post("v1/traces") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 16 << 20)
            receiver.take(try? JSON.parse(Data(buffer: body)))
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: "{}")))
        }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { port.set($0.localAddress?.port ?? 0) }, logger: testLogger())
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            let endpoint = "http://127.0.0.1:\(try await port.value())/v1/traces"
            try await body(receiver, endpoint)
            group.cancelAll()
        }
    }

    private func take(_ export: JSON?) {
        var found: [ExportedSpan] = []
        for resource in export?["resourceSpans"]?.arrayValue ?? [] {
            let attributes = resource["resource"]?["attributes"]?.arrayValue ?? []
            let service = attributes.first { $0["key"]?.stringValue == "service.name" }?["value"]?["stringValue"]?.stringValue ?? ""
            for scope in resource["scopeSpans"]?.arrayValue ?? [] {
                for span in scope["spans"]?.arrayValue ?? [] {
                    found.append(
                        ExportedSpan(
                            service: service, name: span["name"]?.stringValue ?? "", traceID: Self.hex(span["traceId"]), spanID: Self.hex(span["spanId"]),
                            parentID: Self.hex(span["parentSpanId"]), kind: span["kind"]?.intValue ?? 0))
                }
            }
        }
        spans.update { $0 += found }
    }

    /// OTLP/JSON writes ids as hex; some exporters as base64 (protobuf's JSON mapping of bytes).
    private static func hex(_ value: JSON?) -> String {
        guard let text = value?.stringValue, !text.isEmpty else { return "" }
        if text.count % 2 == 0, text.allSatisfy(\.isHexDigit) { return text.lowercased() }
        return Data(base64Encoded: text).map { $0.map { String(format: "%02x", $0) }.joined() } ?? text
    }

    /// Waits until spans named `names` have arrived in trace `trace`; returns the trace's spans.
    func trace(_ trace: String, holding names: [String]) async throws -> [ExportedSpan] {
        try await spans.wait(for: "spans \(names) of trace \(trace)", timeout: .seconds(60)) { spans in
            let mine = Set(spans.filter { $0.traceID == trace }.map(\.name))
            return names.allSatisfy(mine.contains)
        }
        return spans.value.filter { $0.traceID == trace }
    }

    /// Waits for a trace holding every one of `names`; returns its spans.
    func someTrace(holding names: [String]) async throws -> [ExportedSpan] {
        var found: [ExportedSpan] = []
        try await spans.wait(for: "a trace holding \(names)", timeout: .seconds(60)) { spans in
            for trace in Set(spans.map(\.traceID)) {
                let mine = spans.filter { $0.traceID == trace }
                if names.allSatisfy({ name in mine.contains { $0.name == name } }) {
                    found = mine
                    return true
                }
            }
            return false
        }
        return found
    }
}

extension [ExportedSpan] {
    func named(_ name: String) throws -> ExportedSpan {
        try #require(first { $0.name == name }, "a span \(name) among \(self)")
    }
}

/// Traces across the server's steps (tracing on: `TRACING=otlp`), exported over OTLP/HTTP to a
/// receiver on loopback: the spans and their parent links.
@Suite("Tracing", .timeLimit(.minutes(3)))
struct TracingTests {
    static func tracing(_ endpoint: String) -> @Sendable (inout ServerConfiguration) -> Void {
        { configuration in
            configuration.tracing.enabled = true
            configuration.tracing.endpoint = endpoint
            configuration.tracing.format = .json
            configuration.tracing.exportDelay = .milliseconds(20)
        }
    }

    /// A user's send, from the app's `traceparent`: the request, the store's transaction that
    /// accepts it, the outbox's delivery (in another task, from the store) and Discord's post, in
    /// one trace, each the child of the one before.
    @Test func aSendIsOneTraceFromTheRequestToDiscord() async throws {
        try await SpanReceiver.withRunning { receiver, endpoint in
            try await withServer(Self.tracing(endpoint)) { server in
                let user = try await server.session()
                let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
                let appSpan = "00f067aa0ba902b7"
                let body = #"{"content":"traced hello"}"#
                let reply = try await server.request(
                    .post, "/v1/messages", token: user.token,
                    headers: [.init("Idempotency-Key")!: UUID().uuidString, .init("traceparent")!: "00-\(trace)-\(appSpan)-01"], json: body)
                #expect(reply.status == .created)
                try await server.settled()
                let spans = try await receiver.trace(trace, holding: ["POST /v1/messages", "store.accept-message", "outbox.deliver", "discord.post-message"])
                let request = try spans.named("POST /v1/messages")
                let accept = try spans.named("store.accept-message")
                let delivery = try spans.named("outbox.deliver")
                let post = try spans.named("discord.post-message")
                #expect(request.parentID == appSpan && request.service == "threaddesk")
                #expect(accept.parentID == request.spanID)
                #expect(delivery.parentID == accept.spanID)
                #expect(post.parentID == delivery.spanID)
                // Server (2), internal (1), producer (4), client (3) in OTLP's numbering.
                let kinds: [Int] = [request.kind, accept.kind, delivery.kind, post.kind]
                #expect(kinds == [2, 1, 4, 3])
            }
        }
    }

    /// An agent's reply, heard by the gateway in process: the batch, its ingestion (queued behind
    /// the user's earlier facts, in another task), the events written to the user's open stream,
    /// and the push, in one trace.
    @Test func aReplyIsOneTraceFromTheGatewayToTheStreamAndThePush() async throws {
        try await SpanReceiver.withRunning { receiver, endpoint in
            try await withServer(gateway: true, Self.tracing(endpoint)) { server in
                let (user, thread, device) = try await server.userWithThread()
                let stream = try await LiveTests.stream(server, user.token)
                defer { stream.close() }
                _ = try await stream.next("the first unread count") { $0.name == "unread" }
                let reply = try server.emulator.replyAsAgent(inThread: thread, content: "traced reply")
                _ = try await stream.next("the reply") { $0.name == "message.created" && $0.data.contains(reply.id) }
                try await server.settled()
                let pushed = server.apns.deliveries(to: device)
                #expect(!pushed.isEmpty)
                let spans = try await receiver.someTrace(holding: ["gateway.events", "mirror.ingest", "live.events", "push.send"])
                let batch = try spans.named("gateway.events")
                let ingest = try spans.named("mirror.ingest")
                #expect(ingest.parentID == batch.spanID)
                #expect(try spans.named("live.events").parentID == ingest.spanID)
                #expect(try spans.named("push.send").parentID == ingest.spanID)
            }
        }
    }

    /// Events the gateway daemon posts with its `traceparent`: the server's spans of the batch are
    /// children of the daemon's span, through the internal route's own.
    @Test func theDaemonsTraceGoesOnInTheServer() async throws {
        try await SpanReceiver.withRunning { receiver, endpoint in
            try await withServer(Self.tracing(endpoint)) { server in
                let trace = "0af7651916cd43dd8448eb211c80319c"
                let daemonSpan = "b7ad6b7169203331"
                let body = String(
                    decoding: try JSONEncoder().encode(ForumEventBatch(events: [.alive, .typing(channelID: "1", userID: "2")])), as: UTF8.self)
                let reply = try await server.request(
                    .post, "/internal/gateway/events",
                    headers: [.authorization: "Bearer test-gateway-secret", .init("traceparent")!: "00-\(trace)-\(daemonSpan)-01"], json: body)
                #expect(reply.status == .ok)
                let spans = try await receiver.trace(trace, holding: ["POST /internal/gateway/events", "gateway.events"])
                let route = try spans.named("POST /internal/gateway/events")
                #expect(route.parentID == daemonSpan)
                #expect(try spans.named("gateway.events").parentID == route.spanID)
            }
        }
    }

    /// The gateway daemon and the server both tracing: a reply the daemon heard is one trace from
    /// its forwarding (`threaddesk-gateway`) through the internal route to the server's ingestion.
    @Test func aReplyHeardByTheDaemonIsOneTraceAcrossBothProcesses() async throws {
        try await SpanReceiver.withRunning { receiver, endpoint in
            let secret = "daemon-secret-at-least-thirty-two-characters"
            try await withServer({ configuration in
                Self.tracing(endpoint)(&configuration)
                configuration.gatewaySecret = secret
            }) { server in
                let (_, thread, _) = try await server.userWithThread()
                let port = try #require(server.client.port)
                var settings = try GatewayDaemonConfiguration(environment: [
                    "DISCORD_TOKEN": server.discord.botToken, "DISCORD_FORUM_CHANNEL_ID": server.discord.forumChannelID,
                    "DISCORD_API_URL": server.discord.restURL, "SERVER_URL": "http://127.0.0.1:\(port)", "GATEWAY_SECRET": secret,
                    "TRACING": "otlp", "TRACING_ENDPOINT": endpoint, "TRACING_PROTOCOL": "http/json",
                ])
                settings.tracing.exportDelay = .milliseconds(20)
                let daemon = buildGatewayServices(configuration: settings, logger: testLogger())
                let group = ServiceGroup(services: daemon.services, gracefulShutdownSignals: [], logger: testLogger())
                let running = Task { try await group.run() }
                defer { running.cancel() }
                try await eventually("the daemon's gateway connected") { daemon.connection.currentStatus.connected }
                _ = try server.emulator.replyAsAgent(inThread: thread, content: "heard by the daemon")
                let spans = try await receiver.someTrace(holding: ["gateway.forward", "POST /internal/gateway/events", "gateway.events", "mirror.ingest"])
                let forward = try spans.named("gateway.forward")
                let route = try spans.named("POST /internal/gateway/events")
                #expect(forward.service == "threaddesk-gateway" && forward.parentID.isEmpty && route.service == "threaddesk")
                #expect(route.parentID == forward.spanID)
                #expect(try spans.named("gateway.events").parentID == route.spanID)
                await group.triggerGracefulShutdown()
            }
        }
    }

    /// The gateway's heartbeats alone are no trace: a batch of `alive` events makes no span.
    @Test func heartbeatsAloneMakeNoSpan() async throws {
        try await SpanReceiver.withRunning { receiver, endpoint in
            try await withServer(Self.tracing(endpoint)) { server in
                let heartbeat = String(decoding: try JSONEncoder().encode(ForumEventBatch(events: [.alive])), as: UTF8.self)
                #expect(try await server.forward(heartbeat).status == .ok)
                let typing = String(decoding: try JSONEncoder().encode(ForumEventBatch(events: [.typing(channelID: "1", userID: "2")])), as: UTF8.self)
                #expect(try await server.forward(typing).status == .ok)
                // The second batch's span came; by then the first's would have too (one exporter, in order).
                let spans = try await receiver.someTrace(holding: ["gateway.events"])
                #expect(spans.filter { $0.name == "gateway.events" }.count == 1)
                #expect(receiver.spans.value.filter { $0.name == "gateway.events" }.count == 1)
            }
        }
    }

    /// On: only a well-formed W3C `traceparent` is a parent; anything else a client sends is none,
    /// and the request is answered as ever.
    @Test func aMalformedTraceparentIsNoParent() async throws {
        var settings = TracingSettings()
        settings.enabled = true
        let traces = try settings.makeTraces(serviceName: "test", logger: testLogger()).traces
        #expect(traces.context(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") != nil)
        for bad in [
            "x", "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", String(repeating: "0", count: 4096),
        ] {
            #expect(traces.context(traceparent: bad) == nil, "\(bad.prefix(60))")
        }
        try await SpanReceiver.withRunning { receiver, endpoint in
            try await withServer(Self.tracing(endpoint)) { server in
                let user = try await server.session()
                let reply = try await server.request(.get, "/v1/unread", token: user.token, headers: [.init("traceparent")!: "x"])
                #expect(reply.status == .ok)
                // Its span is a root of a trace of its own.
                let spans = try await receiver.someTrace(holding: ["GET /v1/unread"])
                #expect(try spans.named("GET /v1/unread").parentID.isEmpty)
            }
        }
    }

    /// Off (the default): no exporter, no span; a `traceparent` sent changes nothing.
    @Test func offByDefaultAndMalformedTraceContextIsIgnored() async throws {
        #expect(TracingSettings().enabled == false)
        var problems: [String] = []
        let settings = TracingSettings(environment: ["TRACING": "otlp", "TRACING_PROTOCOL": "grpc", "TRACING_SAMPLE_RATIO": "2"], problems: &problems)
        #expect(settings.enabled && problems == ["TRACING_PROTOCOL (http/protobuf or http/json)", "TRACING_SAMPLE_RATIO (0 to 1)"])
        let traces = try TracingSettings().makeTraces(serviceName: "test", logger: testLogger())
        #expect(!traces.traces.isOn && traces.exporter == nil)
        #expect(traces.traces.context(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == nil)
    }
}
