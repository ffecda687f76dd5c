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

/// The hub's own work: keep-alives and stall checks on the server's clock while it runs, every
/// stream ended at the stop.
extension LiveHub {

    /// Keep-alives and stall checks until graceful shutdown, then ends every stream (their
    /// responses finish, so the server's drain is not held up by them).
    func run() async throws {
        await withDiscardingTaskGroup { group in
            if let bus {
                group.addTask {
                    // After a (re)connection, streams re-read: announcements may have been missed.
                    await bus.listen(receive: { [weak self] in self?.received($0) }, connected: { [weak self] in
                        self?.broadcast(.changed)
                        self?.broadcast(.tokensChanged)
                    })
                }
            }
            if let bus { group.addTask { await self.sendAnnouncements(bus) } }
            group.addTask { await self.tick() }
            try? await gracefulShutdown()
            group.cancelAll()
        }
        let heard = time.elapsed()
        let stamp = quiesced.load(ordering: .relaxed)
        let quiesceBegan = stamp == 0 ? nil : Duration.nanoseconds(Int64(stamp))
        let streams = state.withLock { state in
            state.stopped = true
            return state.streams.values.flatMap(\.values)
        }
        // Most ended already at the listener's quiesce; the rest end here, a batch per job.
        EventStreamSink.stop(streams.compactMap { $0.stopping() })
        let closing = handlers.load(ordering: .relaxed)
        await handlersClosed(within: stopWait)
        logger.notice(
            "Event streams ended at the stop",
            metadata: [
                "open": "\(streams.count)", "closing": "\(closing)", "left": "\(handlers.load(ordering: .relaxed))",
                "seconds": "\(Self.seconds(time.elapsed() - heard))",
                "after the quiesce": "\(quiesceBegan.map { Self.seconds(heard - $0) } ?? "none")",
            ])
    }

    /// How long the hub waits at the stop for its streams' connections to close: half of what is
    /// left of the stop's drain (which every part shares, counted from the first to hear of the
    /// stop), so the stages after the hub (the store, the connections) keep the other half; 5 s
    /// without one (a hub made apart). Each stream's last chunk waits a second at most
    /// (`EventStreamHandler.lastChunkAtStop`): what takes longer is the machine ending many streams,
    /// and those still closing when the wait is over are closed by the process's exit. (Waiting
    /// for all of the drain held replicas of 16,667 streams each on a 2-core machine until 9.6–9.8 s
    /// of a 10 s grace, and left a later stage too little: `bench/RESULTS.md`, issue 62.)
    var stopWait: Duration { drain.map { $0.left / 2 } ?? .seconds(5) }

    private static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.3f", Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// A stream's handler joined its connection's pipeline.
    func handlerAdded() { handlers.add(1, ordering: .relaxed) }

    /// A stream's handler left its pipeline (its connection closed).
    func handlerRemoved() {
        if handlers.subtract(1, ordering: .relaxed).newValue == 0 { handlerGone.signal() }
    }

    /// Waits, up to `limit`, until every stream's connection has closed: the streams that ended
    /// at the stop (the server's quiesce or `finish` above) write their last chunk first. The
    /// HTTP server no longer waits for them, since they have no task.
    private func handlersClosed(within limit: Duration) async {
        let deadline = time.elapsed() + limit
        // A cancelled wait returns at once: cancellation ends the loop too, or it would spin.
        while handlers.load(ordering: .relaxed) > 0, !Task.isCancelled {
            guard time.elapsed() < deadline else {
                logger.notice("Event streams still closing at the stop", metadata: ["streams": "\(handlers.load(ordering: .relaxed))"])
                return
            }
            await time.wait(for: handlerGone, untilElapsed: deadline)
        }
    }

    static func rounds(_ settings: Settings) -> KeepAliveRounds {
        KeepAliveRounds(keepAlive: settings.keepAlive, writeTimeout: settings.writeTimeout, maxDuration: settings.maxDuration)
    }

    private func tick() async {
        var rounds = Self.rounds(settings)
        while !Task.isCancelled {
            // Ticks come often (a slice of the streams each): with none open, the timer rests
            // until one opens (a wait a cancellation leaves whole).
            if openStreams == 0, !(await streamOpened.wait()) { return }
            guard (try? await time.sleep(for: rounds.tick)) != nil else { return }
            let slot = rounds.advance()
            if rounds.sweepDue() { sweep() }
            if let slot {
                let due = state.withLock { state in state.bySlot[slot].values.compactMap(\.handler) }
                EventStreamSink.keepAlive(due)
            }
        }
    }

    /// Reads the process's memory every few seconds (the gauges), and gives the heap's free
    /// memory back when a burst of openings is over or the heap holds much more than after the
    /// last trim (`HeapTrimPolicy`).
    private func keepHeap(at now: UInt64) {
        var memory = state.withLock { $0.heapTrim.readingDue(at: now) }.flatMap { ProcessMemory.current(heap: $0 == .heap) }
        if let resident = memory, resident.heapInUse == nil, state.withLock({ $0.heapTrim.heapDue(at: now, resident: resident.resident) }) {
            memory = ProcessMemory.current(heap: true)
        }
        if let memory { report(memory) }
        guard let reason = state.withLock({ $0.heapTrim.trimDue(at: now, memory: memory) }) else { return }
        let trimmed = trimHeap()
        let after = ProcessMemory.current()
        state.withLock { $0.heapTrim.trimmed(at: now, leaving: after) }
        metrics.heapTrimmed(reason: reason.rawValue)
        if let after { report(after) }
        logger.info(
            "Free heap memory given back",
            metadata: [
                "reason": "\(reason.rawValue)", "trimmed": "\(trimmed)", "resident before": "\(memory?.resident ?? 0)",
                "resident after": "\(after?.resident ?? 0)",
            ])
    }

    private func report(_ memory: ProcessMemory) {
        let (count, baseline) = state.withLock { ($0.count, $0.residentWithoutStreams) }
        let perStream = count > 0 ? Double(max(0, memory.resident - (baseline ?? memory.resident))) / Double(count) : 0
        metrics.memory(resident: memory.resident, heapInUse: memory.heapInUse, heapFree: memory.heapFree, perStream: perStream)
    }

    /// Closes the streams whose client stopped reading (a write pending past `writeTimeout`) and
    /// ends those whose lifetime is over.
    private func sweep() {
        let now = Self.stamp(time.elapsed())
        keepHeap(at: now)
        for subscriber in allSubscribers() {
            if subscriber.handler == nil, !subscriber.connection.isActive {
                // Its answer never began (the client left while it was being opened): nothing
                // else would let it go.
                unsubscribe(subscriber)
            } else if subscriber.stalled(at: now, limit: settings.writeTimeout) {
                logger.info("Closing an event stream whose client stopped reading", metadata: ["user": "\(subscriber.user.logValue)"])
                metrics.live.dropped.increment()
                work.adjust(Self.droppedLevel, by: 1)
                subscriber.close()
            } else if subscriber.expired(at: now) {
                // Ends the response normally; the client resumes from its last event.
                subscriber.finish()
            }
        }
    }
}
