import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What happens in the conversation, as ``ThreadDeskClient/events(resumingAfter:)`` delivers it.
public enum ThreadDeskEvent: Sendable, Hashable {
    /// A new visible message: support's reply, or the user's own (from this or another device).
    case messageCreated(SupportMessage)
    case messageUpdated(SupportMessage)
    case messageDeleted(id: String)
    /// The user's read mark moved (on another device, say).
    case read(messageId: String)
    /// Unread support messages now; the first event of every connection.
    case unread(count: Int)
    /// Support is typing, until this moment unless a message or another `typing` comes first.
    case typing(until: Date)
    /// What happened while the app was away cannot be replayed: fetch the messages again.
    case reset(reason: String)
    /// How the events arrive right now.
    case connection(ConnectionState)
    /// Support closed a conversation it answered: the user may rate it once
    /// (``ThreadDeskClient/rate(_:idempotencyKey:)``). Comes again on each new stream while it waits.
    case ratingRequested(RatingRequest)
}

/// A live event and the stream position to resume after once it is handled
/// (``ThreadDeskClient/updates(resumingAfter:)``).
public struct LiveUpdate: Sendable, Hashable {
    public var event: ThreadDeskEvent
    /// The `Last-Event-ID` to resume after; nil before the stream delivered any event.
    public var position: String?

    public init(event: ThreadDeskEvent, position: String?) {
        self.event = event
        self.position = position
    }
}

/// How ``ThreadDeskEvent``s arrive.
public enum ConnectionState: Sendable, Hashable {
    /// The live stream is open.
    case live
    /// The stream dropped; the next attempt comes after this many seconds.
    case reconnecting(after: TimeInterval)
    /// The stream is unavailable (a proxy that buffers, a server without it, repeated failures):
    /// new messages are polled for and the stream is tried again later. Edits, deletions and
    /// typing are not seen while polling.
    case polling
}

extension ThreadDeskEvent {
    /// The event a server-sent event stands for; nil for one this SDK does not know (a newer
    /// server), which is skipped.
    init?(_ event: ServerSentEvent) throws(ThreadDeskError) {
        guard let name = LiveEventName(rawValue: event.name) else { return nil }
        let data = Data(event.data.utf8)
        func decode<T: Decodable>(_ type: T.Type) throws(ThreadDeskError) -> T {
            do {
                return try JSONDecoder().decode(T.self, from: data)
            } catch {
                throw .invalidResponse("event \(event.name): \(error)")
            }
        }
        switch name {
        case .messageCreated: self = .messageCreated(try decode(SupportMessage.self))
        case .messageUpdated: self = .messageUpdated(try decode(SupportMessage.self))
        case .messageDeleted: self = .messageDeleted(id: try decode(MessageDeleted.self).id)
        case .read: self = .read(messageId: try decode(ReadMark.self).messageId)
        case .unread: self = .unread(count: try decode(UnreadCount.self).count)
        case .reset: self = .reset(reason: try decode(StreamReset.self).reason)
        case .ratingRequested: self = .ratingRequested(try decode(RatingRequest.self))
        case .typing:
            let typing = try decode(Typing.self)
            guard let until = ISO8601.date(typing.expiresAt) else { throw .invalidResponse("typing.expiresAt \(typing.expiresAt)") }
            self = .typing(until: until)
        }
    }
}

enum ISO8601 {
    static func date(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }
}

/// One HTTP response read as it arrives: first the status and headers, then the body in pieces.
/// URLSession's delegate delivers pieces on every platform (`bytes(for:)` is Apple-only).
enum StreamChunk: Sendable {
    case head(status: Int, headers: [String: String])
    case body(Data)
}

final class StreamingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // The continuation is Sendable; `sentHead` is only touched on the session's serial delegate queue.
    let continuation: AsyncThrowingStream<StreamChunk, any Error>.Continuation
    private var sentHead = false

    init(_ continuation: AsyncThrowingStream<StreamChunk, any Error>.Continuation) {
        self.continuation = continuation
    }

    /// The head goes out with the first bytes (or the end): read from the task itself, which
    /// works alike on every platform without the response callback's differing signatures.
    private func head(of task: URLSessionTask) {
        guard !sentHead, let http = task.response as? HTTPURLResponse else { return }
        sentHead = true
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        continuation.yield(.head(status: http.statusCode, headers: headers))
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        head(of: dataTask)
        continuation.yield(.body(data))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        head(of: task)
        if let error { continuation.finish(throwing: error) } else { continuation.finish() }
        session.finishTasksAndInvalidate()
    }
}

extension URLRequest {
    /// Opens the request as a stream of chunks (the head first); ending the iteration cancels
    /// the request. `idleTimeout`: the longest silence, in seconds, before the connection is
    /// given up (the server sends a keep-alive every 20 s).
    func streamed(idleTimeout: TimeInterval) -> AsyncThrowingStream<StreamChunk, any Error> {
        let request = self
        return AsyncThrowingStream { continuation in
            let configuration = URLSessionConfiguration.ephemeral
            configuration.timeoutIntervalForRequest = idleTimeout
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            let session = URLSession(configuration: configuration, delegate: StreamingDelegate(continuation), delegateQueue: queue)
            var timed = request
            timed.timeoutInterval = idleTimeout
            let task = session.dataTask(with: timed)
            continuation.onTermination = { _ in
                task.cancel()
                session.invalidateAndCancel()
            }
            task.resume()
        }
    }
}
