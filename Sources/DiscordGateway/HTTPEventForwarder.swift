import AsyncHTTPClient
import Deadlines
import DiscordREST
import Foundation
import Logging
import ThreadDeskTracing
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import ServiceLifecycle
import Synchronization

/// The daemon's sink: queues events and posts them in batches to the server's internal route,
/// retrying with backoff while the server is away. The queue is bounded: when it overflows the
/// oldest events are dropped and a gap is sent in their place, so the server catches up through
/// REST instead of losing replies.
public final class HTTPEventForwarder: ForumEventSink, Service, CustomStringConvertible {
    public struct Configuration: Sendable {
        public var serverURL: String
        public var secret: String
        public var maxQueued = 10_000
        public var maxBatch = 200
        public var backoffBase: Duration = .milliseconds(200)
        public var backoffCap: Duration = .seconds(10)

        public init(serverURL: String, secret: String) {
            self.serverURL = serverURL.hasSuffix("/") ? String(serverURL.dropLast()) : serverURL
            self.secret = secret
        }
    }

    private struct Queue {
        /// Each event with its number, so a post in flight removes exactly what it carried.
        var events: [(number: UInt64, event: ForumEvent)] = []
        var next: UInt64 = 0
        var dropped = 0

        mutating func append(_ event: ForumEvent) {
            events.append((next, event))
            next += 1
        }
    }

    public let configuration: Configuration
    public var description: String { "HTTPEventForwarder(to \(configuration.serverURL))" }
    private let queue = Mutex(Queue())
    private let postAttempts = Atomic<Int>(0)
    private let logger: Logger
    private let http: HTTPClient
    /// Times the backoff between attempts (a manual clock in tests).
    private let clock: any Clock<Duration>
    /// Wakes the posting loop; holds at most one wake-up.
    private let wakeUps = WakeSignal()

    private let ownsClient: Bool
    /// Each post is a span, its W3C `traceparent` on the request: the server's spans of the batch are its children.
    private let traces: Traces

    /// Without `httpClient` the forwarder makes its own, which fails an attempt as soon as the
    /// server refuses the connection (the forwarder's own backoff decides when to try again).
    public init(
        configuration: Configuration, httpClient: HTTPClient? = nil, clock: any Clock<Duration> = ContinuousClock(), traces: Traces = .off,
        logger: Logger
    ) {
        self.configuration = configuration
        self.traces = traces
        if let httpClient {
            self.http = httpClient
            ownsClient = false
        } else {
            var client = HTTPClient.Configuration(timeout: .init(connect: .seconds(5), read: .seconds(30)))
            client.connectionPool.retryConnectionEstablishment = false
            self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: client)
            ownsClient = true
        }
        self.clock = clock
        self.logger = logger
    }

    public func deliver(_ events: [ForumEvent]) async {
        queue.withLock { queue in
            for event in events { queue.append(event) }
            let excess = queue.events.count - configuration.maxQueued
            if excess > 0 {
                // The oldest go, and a gap (a new number: no post in flight carries it) takes their place.
                queue.events.removeFirst(excess + 1)
                queue.events.insert((queue.next, .gap), at: 0)
                queue.next += 1
                queue.dropped += excess
            }
        }
        wakeUps.signal()
    }

    /// Events waiting to be posted (for tests and health).
    public var queued: Int { queue.withLock { $0.events.count } }

    /// Posts tried so far, failed ones included (for tests and health).
    public var attempts: Int { postAttempts.load(ordering: .relaxed) }

    public func run() async throws {
        try? await cancelWhenGracefulShutdown {
            var delay = self.configuration.backoffBase
            while !Task.isCancelled {
                // Taken anew for every attempt, so a retry carries what arrived meanwhile.
                let batch = try await self.nextBatch()
                if await self.post(batch.map(\.event)) {
                    // Only what this post carried: an overflow meanwhile may have changed the front.
                    let posted = Set(batch.map(\.number))
                    self.queue.withLock { queue in
                        queue.events.removeAll { posted.contains($0.number) }
                        // A burst's storage goes back once it has been posted, not kept for the next.
                        if queue.events.isEmpty { queue.events = [] }
                    }
                    delay = self.configuration.backoffBase
                } else {
                    try await self.clock.sleep(for: delay * Double.random(in: 0.5...1.0))
                    delay = min(delay * 2, self.configuration.backoffCap)
                }
            }
        }
        if ownsClient { try? await http.shutdown() }
    }

    /// Waits for events and returns the oldest ones, still queued until posted.
    private func nextBatch() async throws -> [(number: UInt64, event: ForumEvent)] {
        while true {
            let batch = queue.withLock { Array($0.events.prefix(configuration.maxBatch)) }
            if !batch.isEmpty { return batch }
            await wakeUps.wait()
            try Task.checkCancellation()
        }
    }

    /// One attempt at handing `batch` to the server; whether it took it.
    private func post(_ batch: [ForumEvent]) async -> Bool {
        // Heartbeats alone (`alive`) are no trace: they would be most of them.
        guard traces.isOn, batch.contains(where: { if case .alive = $0 { false } else { true } }) else { return await postTraced(batch) }
        return await traces.span("gateway.forward", kind: .producer, attributes: traces.isOn ? ["threaddesk.events": .int64(Int64(batch.count))] : [:]) { span in
            let taken = await postTraced(batch)
            if !taken { span.failed("the server did not take the batch") }
            return taken
        }
    }

    private func postTraced(_ batch: [ForumEvent]) async -> Bool {
        postAttempts.add(1, ordering: .relaxed)
        do {
            var request = HTTPClientRequest(url: configuration.serverURL + "/internal/gateway/events")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(configuration.secret)")
            request.headers.add(name: "Content-Type", value: "application/json")
            if let traceparent = traces.traceparent() { request.headers.add(name: Traces.header, value: traceparent) }
            request.body = .bytes(ByteBuffer(data: try JSONEncoder().encode(ForumEventBatch(events: batch))))
            let response = try await http.execute(request, timeout: .seconds(30))
            _ = try await withTimeout(.seconds(30), "the server's answer to a batch") {
                try await response.body.collect(upTo: 1 << 20)
            }
            if response.status == .ok { return true }
            logger.warning("Server refused a batch of gateway events", metadata: ["status": "\(response.status.code)"])
        } catch {
            logger.warning("Server unreachable; will retry", metadata: ["error": "\(error)"])
        }
        return false
    }
}

extension HTTPEventForwarder.Configuration: CustomReflectable {
    public var customMirror: Mirror { Mirror(self, children: ["serverURL": serverURL, "secret": "<redacted>"]) }
}
