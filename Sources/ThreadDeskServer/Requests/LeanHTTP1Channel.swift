import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import Prometheus
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Hummingbird's HTTP/1.1 channel with a smaller first receive buffer. NIO sizes each
/// connection's next read from its last ones, starting at 2 KiB; the requests here (polls, sends,
/// a stream's one GET) are a few hundred bytes, and an idle event stream should not hold more.
/// Bigger bodies still grow the buffer as they arrive. Every request arrives within `arrival`
/// (`RequestArrivalHandler`).
struct LeanHTTP1Channel: ServerChildChannel {
    let base: HTTP1Channel
    let arrival: RequestArrivalLimits
    /// Counts the connections whose task runs (nil: not counted).
    let tasks: Gauge?
    /// The stop's drain, begun by the first connection that hears the listener quiesce.
    let stop: ShutdownDrain?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1Channel.Value> {
        channel.setOption(ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536))
            .flatMap { _ in base.setup(channel: channel, logger: logger) }
            .flatMapThrowing { value in
                let pipeline = channel.pipeline.syncOperations
                let handler = RequestArrivalHandler(limits: arrival)
                // After the codec (it sees whole parts), before the connection's own state handler.
                try pipeline.addHandler(handler, position: .before(try pipeline.handler(type: HTTPConnectionStateHandler.self)))
                try pipeline.addHandler(RequestArrivalStart(handler, stop: stop), position: .first)
                return value
            }
    }

    func handle(value: HTTP1Channel.Value, logger: Logger) async {
        tasks?.increment()
        defer { tasks?.decrement() }
        await base.handle(value: value, logger: logger)
    }
}

/// Answers a request in two steps, as Hummingbird's application does, but the first (routing,
/// middleware, the handler) in a task of its own that ends with it; only the second (writing the
/// response) runs in the connection's task. A Swift task keeps every slab of memory its deepest
/// stack ever needed until it ends, and the connection's task lives as long as the connection:
/// an event stream's for an hour. So a stream holds the slabs of its body's loop, not also those
/// of the router, the middleware and the logger's task-local (heaptrack: about half of an idle
/// stream's memory were such slabs).
struct SplitResponder: Sendable {
    let responder: RouterResponder<ThreadDeskRequestContext>
    let serverName: String
    let logger: Logger
    let dates = DateHeader()

    func respond(_ request: Request, _ writer: consuming ResponseWriter, _ channel: any Channel) async throws {
        let response = try await apart(request, channel)
        do {
            try await writer.write(response: response.head, body: response.body)
        } catch let error as HTTPParserError {
            // Thrown again, it would make the channel write a second response.
            throw ParseErrorWhileWriting(error: error)
        }
    }

    /// The answer, from a task that has ended (and so freed its memory) by the time it returns.
    /// Unstructured, so nothing of it stays in the caller's frame (an `async let` would, until
    /// the caller's scope ends: the whole stream). The request's deadline bounds it, and at
    /// shutdown `DeadlineMiddleware` cancels it after the drain.
    @inline(never)
    private func apart(_ request: Request, _ channel: any Channel) async throws -> Response {
        let answering = Task { try await answer(request, channel) }
        return try await answering.value
    }

    @inline(never)
    private func answer(_ request: Request, _ channel: any Channel) async throws -> Response {
        var logger = self.logger
        logger[metadataKey: "hb.request.id"] = .stringConvertible(RequestID())
        return try await withLogger(logger) { logger in
            let context = ThreadDeskRequestContext(source: .init(channel: channel, logger: logger))
            var response: Response
            do {
                response = try await responder.respond(to: request, context: context)
            } catch let error as HTTPParserError {
                throw error
            } catch {
                // The error middleware answers every error the routes throw; this is its safety net.
                logger.debug("Unrecognised error", metadata: ["error.type": "\(type(of: error))"])
                response = Response(status: .internalServerError)
            }
            response.headers[.date] = dates.now()
            response.headers[.server] = serverName
            return response
        }
    }

    struct ParseErrorWhileWriting: Error {
        let error: HTTPParserError
    }
}

/// The `Date` header's text, made at most once a second (RFC 9110's IMF-fixdate).
final class DateHeader: Sendable {
    private let cached = Mutex<(second: Int, text: String)>((-1, ""))

    func now() -> String {
        let second = Int(Date().timeIntervalSince1970)
        if let text = cached.withLock({ $0.second == second ? $0.text : nil }) { return text }
        let text = Self.format(second)
        cached.withLock { $0 = (second, text) }
        return text
    }

    static func format(_ second: Int) -> String {
        var seconds = second
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}

extension HTTPServerBuilder {
    /// The lean channel answering through `responder` split in two (`SplitResponder`); the
    /// application's own responder, which would route the same requests in one task, is not used.
    static func leanHTTP1(
        configuration: HTTP1Channel.Configuration, arrival: RequestArrivalLimits, responder: SplitResponder, tasks: Gauge? = nil,
        stop: ShutdownDrain? = nil
    ) -> HTTPServerBuilder {
        .init { _ in
            LeanHTTP1Channel(
                base: HTTP1Channel(responder: { request, writer, channel in
                    try await responder.respond(request, writer, channel)
                }, configuration: configuration),
                arrival: arrival, tasks: tasks, stop: stop)
        }
    }
}
