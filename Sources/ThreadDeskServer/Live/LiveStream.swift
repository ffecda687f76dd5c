import Deadlines
import Foundation
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskTracing
import ThreadDeskWire

/// What one open `/v1/events` stream reads from the store: its first events (written by the
/// connection's task, in the response's body), then, once `EventStreamHandler` holds the stream,
/// what each wake-up brings and whether its token still lives. Each of those later reads runs in a
/// task of its own that ends with it: an idle stream has no task at all.
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

    /// What a read of the changes after a position gave.
    enum ChangeRead: Sendable {
        case events(LiveFeed.Batch)
        /// The store could not answer: the next wake-up (or the client's reconnection) reads from
        /// the same position.
        case unavailable
        /// The read failed otherwise: the stream ends, and the client resumes from its last event.
        case failed
    }

    /// The first events, read before the answer: what the client missed (or a reset) and the unread count.
    func start() async throws -> LiveFeed.Batch {
        try await Deadline.within(timeout) { try await feed.start(subscriber.user, lastEventID: lastEventID) }
    }

    /// Writes `retry`, then the first events, through the response's writer.
    func begin(_ start: LiveFeed.Batch, _ writer: inout any ResponseBodyWriter) async throws {
        // Reconnect after 3 s when the connection drops.
        var text = "retry: 3000\n\n"
        text += start.events.map(\.text).joined()
        try await subscriber.writing { try await writer.write(ByteBuffer(string: text)) }
        metrics.live.events.increment(by: Int64(start.events.count))
    }

    /// Reads what changed after `position` and hands it to `deliver` (the stream's handler). A
    /// traced change's read and hand-over are a span of its trace: the end of that trace here.
    func readChanges(after position: Int64, trace: TraceContext?, deliver: @Sendable (ChangeRead) async -> Void) async {
        let read: ChangeRead
        do {
            guard let trace else {
                await deliver(.events(try await events(after: position)))
                return
            }
            try await traces.span("live.events", kind: .producer, parent: trace) { span in
                let batch = try await events(after: position)
                span.set(["threaddesk.events": .int64(Int64(batch.events.count))])
                await deliver(.events(batch))
            }
            return
        } catch let error as StoreUnavailableError {
            logger.notice("Could not read a stream's events", metadata: ["error": "\(error)"])
            read = .unavailable
        } catch {
            logger.debug("An event stream ended", metadata: ["error": "\(error)"])
            read = .failed
        }
        await deliver(read)
    }

    private func events(after position: Int64) async throws -> LiveFeed.Batch {
        try await Deadline.within(timeout) { try await feed.events(subscriber.user, after: position) }
    }

    /// What a check of the stream's token found.
    enum TokenCheck: Sendable {
        /// Still live (not signed out, ended by a newer session, or its claim replaced).
        case lives
        case ended
        /// The store could not answer: the stream goes on, and the next signal (a keep-alive at
        /// the latest) checks again.
        case unknown
        /// The check failed otherwise: the stream ends.
        case failed(any Error)
    }

    /// Checks the token the stream was opened with.
    func checkToken() async -> TokenCheck {
        do {
            let lives = try await Deadline.within(timeout) {
                try await users.user(subscriber.user)?.holdsToken(hash: subscriber.tokenHash) ?? false
            }
            return lives ? .lives : .ended
        } catch let error as StoreUnavailableError {
            logger.notice("Could not check a stream's token", metadata: ["error": "\(error)"])
            subscriber.requestTokenCheck()
            return .unknown
        } catch {
            return .failed(error)
        }
    }

    /// Whether the token still lives, for the opening: a store that cannot answer lets the
    /// stream open with the check pending.
    func tokenLives() async throws -> Bool {
        switch await checkToken() {
        case .lives, .unknown: return true
        case .ended: return false
        case .failed(let error): throw error
        }
    }

    /// A typing event at `position`, or nil when it expired already.
    func typing(until expiresAt: Date, at position: Int64) -> LiveEvent? {
        guard expiresAt > now() else { return nil }
        return .encoded(position, .typing, Typing(expiresAt: expiresAt.formatted(.iso8601)))
    }
}
