import Deadlines
import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Prometheus
import NIOCore
import ServiceLifecycle
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskTracing
import ThreadDeskWire

/// `/v1/events`, `/v1/typing`, `/v1/read`, `/v1/unread`: the live conversation.
struct LiveRoutes: Sendable {
    let live: LiveService
    let users: any UserRecords
    let quotas: Quotas
    /// How long one read of the store for a stream may take.
    let timeout: Duration
    let metrics: ServerMetrics
    let logger: Logger

    func register(on groups: V1Groups) {
        groups.streamers(through: live.openings, charging: { .read($0) }).get("events", use: events)
        groups.users(charging: { .read($0) }).get("unread", use: unread)
        groups.users(charging: { .update($0) }).post("read", use: read)
        groups.users.post("typing", use: typing)
    }

    /// Server-sent events of the user's conversation. `Last-Event-ID` (or `?lastEventId=`, for
    /// clients that cannot set headers) resumes after that event.
    @Sendable func events(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let record = try context.user()
        let token = try context.userToken()
        let address = quotas.clientAddress(request, context)
        let lastEventID = request.headers[.lastEventID] ?? request.uri.queryParameters["lastEventId"].map(String.init)
        if let lastEventID, lastEventID.utf8.count > 20 || !lastEventID.allSatisfy({ $0.isASCII && $0.isNumber }) {
            throw APIError.badRequest(.invalidLastEventId, "Last-Event-ID must be the id of an event this stream sent (digits).")
        }
        let hub = live.hub
        let subscriber: LiveHub.Subscriber
        do {
            let channel = context.channel
            subscriber = try hub.subscribe(record.id, address: address, tokenHash: UserToken.hash(token)) { channel.close(promise: nil) }
        } catch .inAll {
            throw APIError(.serviceUnavailable, .busy, "Too many open event streams; try again shortly.", retryAfterSeconds: 5)
        } catch .fromAddress {
            metrics.quotaRefused("event streams per address")
            throw APIError(.tooManyRequests, .rateLimited, "Too many open event streams from this address; close one first.", retryAfterSeconds: 30)
        }
        // A stream needs little kernel buffer: a client that stops reading is found sooner and costs less.
        _ = context.channel.setOption(ChannelOptions.socketOption(.so_sndbuf), value: 16 * 1024)
        let stream = LiveStream(
            feed: live.feed, users: users, subscriber: subscriber, now: live.now, lastEventID: lastEventID, timeout: timeout, metrics: metrics,
            traces: hub.traces, logger: logger)
        // Read before the answer, within the opening's turn (`StreamOpenings`): a store that cannot
        // answer is a 503 the client retries, not a stream that opens and ends.
        let start: LiveFeed.Batch
        do {
            // A token that ended while the stream was being opened: its signal may have come first.
            guard try await stream.tokenLives() else { throw SupportFailure.notAuthenticated }
            start = try await stream.start()
        } catch {
            hub.unsubscribe(subscriber)
            throw error
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-cache, no-transform",
                // nginx and similar proxies otherwise hold the stream back in their buffers.
                .xAccelBuffering: "no",
            ],
            body: ResponseBody { writer in
                defer { hub.unsubscribe(subscriber) }
                await stream.run(from: start, &writer)
                try? await writer.finish(nil)
            })
    }

    @Sendable func typing(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        try await live.userTyping(try context.user())
        return Response(status: .noContent)
    }

    @Sendable func read(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let record = try context.user()
        let body = try await request.decode(ReadRequest.self, limit: Request.smallBodyLimit)
        guard let id = Snowflake(body.messageId) else {
            throw APIError.badRequest(.invalidMessageId, "messageId must be a message id (digits).")
        }
        return try jsonResponse(try await live.markRead(id, for: record.id))
    }

    @Sendable func unread(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        try jsonResponse(try await live.readState(try context.user().id))
    }
}

/// One open `/v1/events` stream: its first events, then whatever its wake-ups bring, until the
/// client goes, the hub closes it, or the server shuts down.
struct LiveStream: Sendable {
    let feed: LiveFeed
    let users: any UserRecords
    let subscriber: LiveHub.Subscriber
    let now: @Sendable () -> Date
    let lastEventID: String?
    /// How long one read of the store may take.
    let timeout: Duration
    let metrics: ServerMetrics
    let traces: Traces
    let logger: Logger

    func run(from start: LiveFeed.Batch, _ writer: inout any ResponseBodyWriter) async {
        do {
            try await withGracefulShutdownHandler {
                try await stream(from: start, &writer)
            } onGracefulShutdown: {
                subscriber.finish()
            }
        } catch {
            // The client went away or stopped reading; it reconnects with Last-Event-ID.
            logger.debug("An event stream ended", metadata: ["error": "\(error)"])
        }
    }

    /// The stream's loop. It runs in the connection's task, which keeps the memory of the deepest
    /// stack it ever had for as long as the stream is open: so the loop's own frame stays small
    /// and each step is a call of its own, never inlined into it (the deepest point is then one
    /// step, not all of them at once).
    @inline(never)
    private func stream(from start: LiveFeed.Batch, _ writer: inout any ResponseBodyWriter) async throws {
        var position = try await begin(start, &writer)
        for await signal in subscriber.signals {
            // A token that may have ended is checked before anything more is sent.
            if subscriber.takeTokenCheck() {
                guard try await tokenLives() else { return }
            }
            // The most frequent step, kept the shallowest.
            if signal == .keepAlive {
                try await subscriber.writing { try await writer.write(ByteBuffer(staticString: ": keep-alive\n\n")) }
                continue
            }
            position = try await handle(signal, after: position, &writer)
        }
    }

    /// The first events, read before the answer: what the client missed (or a reset) and the unread count.
    func start() async throws -> LiveFeed.Batch {
        try await Self.apart { [feed, subscriber, lastEventID, timeout] in
            try await Deadline.within(timeout) { try await feed.start(subscriber.user, lastEventID: lastEventID) }
        }
    }

    /// Writes `retry`, then the first events.
    @inline(never)
    private func begin(_ start: LiveFeed.Batch, _ writer: inout any ResponseBodyWriter) async throws -> Int64 {
        // Reconnect after 3 s when the connection drops.
        try await send("retry: 3000\n\n", &writer)
        try await send(start.events, &writer)
        return start.position
    }

    @inline(never)
    private func handle(_ signal: LiveSignal, after position: Int64, _ writer: inout any ResponseBodyWriter) async throws -> Int64 {
        switch signal {
        case .changed:
            let trace = subscriber.takeChange()
            do {
                let batch = try await Self.apart { [feed, subscriber, timeout] in
                    try await Deadline.within(timeout) { try await feed.events(subscriber.user, after: position) }
                }
                if let trace {
                    // The events a traced change brought, written to the app: the end of its trace here.
                    try await traces.span("live.events", kind: .producer, parent: trace, attributes: ["threaddesk.events": .int64(Int64(batch.events.count))]) { _ in
                        try await send(batch.events, &writer)
                    }
                } else {
                    try await send(batch.events, &writer)
                }
                return batch.position
            } catch let error as StoreUnavailableError {
                // The next wake-up (or the client's reconnection) reads from the same position.
                logger.notice("Could not read a stream's events", metadata: ["error": "\(error)"])
                return position
            }
        case .typing(let expiresAt):
            guard expiresAt > now() else { return position }
            try await send([.encoded(position, .typing, Typing(expiresAt: expiresAt.formatted(.iso8601)))], &writer)
            return position
        case .keepAlive:
            try await send(": keep-alive\n\n", &writer)
            return position
        case .tokensChanged:
            // Checked by the loop before this step, through the flag the signal set.
            return position
        }
    }

    /// Whether the token the stream was opened with is still live (not signed out, ended by a
    /// newer session, or its claim replaced). A store that cannot answer keeps the stream open
    /// and the check pending: the next signal (a keep-alive at the latest) tries again.
    @inline(never)
    func tokenLives() async throws -> Bool {
        let live: Bool
        do {
            live = try await Self.apart { [users, subscriber, timeout] in
                try await Deadline.within(timeout) {
                    try await users.user(subscriber.user)?.holdsToken(hash: subscriber.tokenHash) ?? false
                }
            }
        } catch let error as StoreUnavailableError {
            logger.notice("Could not check a stream's token", metadata: ["error": "\(error)"])
            subscriber.requestTokenCheck()
            return true
        }
        return live
    }

    /// Runs a store read in a child task. The stream itself runs in the connection's task, which
    /// lives as long as the stream and keeps the memory of the deepest stack it ever had: the
    /// read's frames go with the child instead.
    @inline(never)
    private static func apart<T: Sendable>(_ read: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask(operation: read)
            guard let value = try await group.next() else { throw CancellationError() }
            return value
        }
    }

    private func send(_ events: [LiveEvent], _ writer: inout any ResponseBodyWriter) async throws {
        guard !events.isEmpty else { return }
        try await send(events.map(\.text).joined(), &writer)
        metrics.liveEvents.increment(by: Int64(events.count))
    }

    private func send(_ text: String, _ writer: inout any ResponseBodyWriter) async throws {
        try await subscriber.writing { try await writer.write(ByteBuffer(string: text)) }
    }
}

extension HTTPField.Name {
    static let lastEventID = HTTPField.Name(APIHeader.lastEventID)!
    static let xAccelBuffering = HTTPField.Name("X-Accel-Buffering")!
}
