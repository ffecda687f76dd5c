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
            subscriber = try hub.subscribe(record.id, address: address, tokenHash: UserToken.hash(token), connection: context.channel)
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
                // The connection ends with the stream (`EventStreamHandler`): not one to send more requests on.
                .connection: "close",
                // nginx and similar proxies otherwise hold the stream back in their buffers.
                .xAccelBuffering: "no",
            ],
            body: ResponseBody { [channel = context.channel] writer in
                do {
                    try await stream.begin(start, &writer)
                    try await EventStreamHandler.takeOver(channel, stream: stream, hub: hub, from: start.position)
                } catch {
                    // The client went away or stopped reading; it reconnects with Last-Event-ID.
                    hub.unsubscribe(subscriber)
                    throw error
                }
                // The connection's task ends here; the handler writes the rest of the stream.
                throw EventStreamHandler.HandedOver()
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

extension HTTPField.Name {
    static let lastEventID = HTTPField.Name(APIHeader.lastEventID)!
    static let xAccelBuffering = HTTPField.Name("X-Accel-Buffering")!
}
