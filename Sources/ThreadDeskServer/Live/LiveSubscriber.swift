import Deadlines
import Foundation
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskTracing

/// One open stream of the hub: where its signals go, and what the hub watches (its lifetime, a
/// stalled write).
extension LiveHub {
    /// One open stream. Until its first events are written it has no handler yet: what the hub
    /// signals meanwhile is kept in its flags (a change, a token to check, the end) and acted on
    /// when the handler takes over; keep-alives and typing before that are dropped.
    final class Subscriber: Sendable {
        let id: UInt64
        let user: UserID
        /// The client address it counts against (see `ClientAddressRule`).
        let address: String
        /// SHA-256 of the token the stream was opened with: the stream lives no longer than it.
        let tokenHash: String
        /// Whether a change is signalled and not yet read (changes coalesce into one read).
        private let changePending = Atomic<Bool>(false)
        /// Whether the stream's token must be checked before anything more is sent. A flag, not
        /// only a signal: a check that could not be made is asked for again, and the next signal
        /// (a keep-alive at the latest) finds it.
        private let tokenCheckPending = Atomic<Bool>(false)
        /// The hub ended the stream (its lifetime, the user's newer stream, the server stopping).
        private let finished = Atomic<Bool>(false)
        /// The trace of the latest change not yet read (tracing on): the events it brings are a span of it.
        private let changeTrace = Mutex<TraceContext?>(nil)
        /// When the oldest write still pending began (`LiveHub.stamp` of the hub's time), 0 when none is.
        private let writingSince = Atomic<UInt64>(0)
        /// The stream's handler, once it has taken the connection over.
        private let sink = Mutex<EventStreamSink?>(nil)
        /// The stream's connection: closed by the hub before the handler takes it over.
        let connection: any Channel
        /// When the stream is due to end (`LiveHub.stamp` of the hub's time).
        private let endsAt: UInt64
        /// The hub's clock (`ServerTime.elapsed`), which the stamps above read.
        private let elapsed: @Sendable () -> Duration

        /// The hub makes subscribers (`LiveHub.subscribe`), and only the hub signals them.
        init(
            id: UInt64, user: UserID, address: String, tokenHash: String, lifetime: Duration, connection: any Channel,
            elapsed: @escaping @Sendable () -> Duration
        ) {
            self.id = id
            self.user = user
            self.address = address
            self.tokenHash = tokenHash
            self.connection = connection
            let nanoseconds = Double(lifetime.components.seconds) * 1e9 + Double(lifetime.components.attoseconds) / 1e9
            self.elapsed = elapsed
            endsAt = LiveHub.stamp(elapsed()) + UInt64(nanoseconds * Double.random(in: 0.9...1.0))
        }

        /// The hub's own: coalesces changes and sets the token check before the signal goes.
        func signal(_ signal: LiveSignal, trace: TraceContext? = nil) {
            if signal == .tokensChanged { tokenCheckPending.store(true, ordering: .sequentiallyConsistent) }
            if let trace { changeTrace.withLock { $0 = trace } }
            if signal == .changed {
                guard changePending.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged else { return }
            }
            sink.withLock { $0 }?.deliver(signal)
        }

        /// The handler taking the connection over: from now on signals go to it. Returns false when
        /// the hub ended the stream before.
        func attach(_ handler: EventStreamSink) -> Bool {
            sink.withLock { $0 = handler }
            return !finished.load(ordering: .sequentiallyConsistent)
        }

        /// The handler let the stream go: the subscriber no longer holds it (the two would
        /// otherwise keep each other for ever).
        func detach() { sink.withLock { $0 = nil } }

        /// The handler, when one took the connection over.
        var handler: EventStreamSink? { sink.withLock { $0 } }

        /// Whether a change waits to be read.
        var hasChange: Bool { changePending.load(ordering: .sequentiallyConsistent) }

        /// Whether a token check waits (without taking it).
        var hasTokenCheck: Bool { tokenCheckPending.load(ordering: .sequentiallyConsistent) }

        /// Whether the token must be checked now (and clears the request).
        func takeTokenCheck() -> Bool { tokenCheckPending.exchange(false, ordering: .sequentiallyConsistent) }

        /// Asks for the token check again (the last one could not be made).
        func requestTokenCheck() { tokenCheckPending.store(true, ordering: .sequentiallyConsistent) }

        /// Call before reading what changed: a change after this point signals again.
        /// Returns the trace of the change, when one came with it.
        func takeChange() -> TraceContext? {
            changePending.store(false, ordering: .sequentiallyConsistent)
            return changeTrace.withLock { trace in
                defer { trace = nil }
                return trace
            }
        }

        /// Runs one write before the handler takes over, so the hub can tell a stalled client.
        func writing<T>(_ body: () async throws -> T) async rethrows -> T {
            writesBegan()
            defer { writesEnded() }
            return try await body()
        }

        /// A write is pending from now (or, with writes pending, the oldest was taken: the client reads).
        func writesBegan() { writingSince.store(max(1, LiveHub.stamp(elapsed())), ordering: .relaxed) }

        /// No write is pending.
        func writesEnded() { writingSince.store(0, ordering: .relaxed) }

        func expired(at now: UInt64) -> Bool { now >= endsAt }

        func stalled(at now: UInt64, limit: Duration) -> Bool {
            let since = writingSince.load(ordering: .relaxed)
            return since != 0 && now > since && Duration.nanoseconds(Int64(now - since)) > limit
        }

        /// Ends the stream normally: its response ends and the client resumes from its last event.
        func finish() {
            finished.store(true, ordering: .sequentiallyConsistent)
            sink.withLock { $0 }?.finish()
        }

        /// Ends the stream at the stop: what to tell (`EventStreamSink.stop`, with the others'),
        /// nil before its handler took over (which then finds it finished).
        func stopping() -> EventStreamSink? {
            finished.store(true, ordering: .sequentiallyConsistent)
            return sink.withLock { $0 }
        }

        /// Closes the stream's connection at once (a client that stopped reading never lets a write finish).
        func close() {
            finished.store(true, ordering: .sequentiallyConsistent)
            if let handler = sink.withLock({ $0 }) { handler.close() } else { connection.close(promise: nil) }
        }
    }
}
