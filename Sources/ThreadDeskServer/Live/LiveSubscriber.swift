import Deadlines
import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskTracing

/// One open stream of the hub: its signals, and what the hub watches (its lifetime, a stalled write).
extension LiveHub {
    /// One open stream.
    final class Subscriber: Sendable {
        let id: UInt64
        let user: UserID
        /// The client address it counts against (see `ClientAddressRule`).
        let address: String
        /// SHA-256 of the token the stream was opened with: the stream lives no longer than it.
        let tokenHash: String
        let signals: AsyncStream<LiveSignal>
        private let continuation: AsyncStream<LiveSignal>.Continuation
        /// Whether a `.changed` is queued and not yet read (changes coalesce into one wake-up).
        private let changePending = Atomic<Bool>(false)
        /// Whether the stream's token must be checked before anything more is sent. A flag, not
        /// only a signal: a full buffer may drop the signal, the next one (a keep-alive at the
        /// latest) still finds the flag.
        private let tokenCheckPending = Atomic<Bool>(false)
        /// The trace of the latest change not yet read (tracing on): the events it brings are a span of it.
        private let changeTrace = Mutex<TraceContext?>(nil)
        /// When the write in progress began (uptime nanoseconds), 0 when none is.
        private let writingSince = Atomic<UInt64>(0)
        /// Closes the stream's connection (a client that stopped reading never lets a write finish).
        let close: @Sendable () -> Void
        /// When the stream is due to end (uptime nanoseconds).
        private let endsAt: UInt64

        /// The hub makes subscribers (`LiveHub.subscribe`), and only the hub signals them.
        init(
            id: UInt64, user: UserID, address: String, tokenHash: String, lifetime: Duration, close: @escaping @Sendable () -> Void
        ) {
            self.id = id
            self.user = user
            self.address = address
            self.tokenHash = tokenHash
            self.close = close
            let nanoseconds = Double(lifetime.components.seconds) * 1e9 + Double(lifetime.components.attoseconds) / 1e9
            endsAt = DispatchTime.now().uptimeNanoseconds + UInt64(nanoseconds * Double.random(in: 0.9...1.0))
            (signals, continuation) = AsyncStream.makeStream(of: LiveSignal.self, bufferingPolicy: .bufferingNewest(8))
        }

        /// The hub's own: coalesces changes and sets the token check before the signal goes.
        func signal(_ signal: LiveSignal, trace: TraceContext? = nil) {
            if signal == .tokensChanged { tokenCheckPending.store(true, ordering: .sequentiallyConsistent) }
            if let trace { changeTrace.withLock { $0 = trace } }
            if signal == .changed {
                guard changePending.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
            }
            continuation.yield(signal)
        }

        /// Whether the token must be checked now (and clears the request).
        func takeTokenCheck() -> Bool { tokenCheckPending.exchange(false, ordering: .sequentiallyConsistent) }

        /// Asks for the token check again (the last one could not be made).
        func requestTokenCheck() { tokenCheckPending.store(true, ordering: .sequentiallyConsistent) }

        /// Call before reading what changed: a change after this point wakes the stream again.
        /// Returns the trace of the change, when one came with it.
        func takeChange() -> TraceContext? {
            changePending.store(false, ordering: .relaxed)
            return changeTrace.withLock { trace in
                defer { trace = nil }
                return trace
            }
        }

        /// Runs one write, so the hub can tell a stalled client.
        func writing<T>(_ body: () async throws -> T) async rethrows -> T {
            writingSince.store(max(1, DispatchTime.now().uptimeNanoseconds), ordering: .relaxed)
            defer { writingSince.store(0, ordering: .relaxed) }
            return try await body()
        }

        func expired(at now: UInt64) -> Bool { now >= endsAt }

        func stalled(at now: UInt64, limit: Duration) -> Bool {
            let since = writingSince.load(ordering: .relaxed)
            return since != 0 && now > since && Duration.nanoseconds(Int64(now - since)) > limit
        }

        func finish() { continuation.finish() }
    }
}
