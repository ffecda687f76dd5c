/// A wait whose timeout runs on a given clock, so a test can drive it.
extension WakeSignal {
    /// `wait(upTo:)` with the timeout measured on `clock`: on the continuous clock it is the
    /// signal's own timer; on any other clock (a test's manual one) a sleep on that clock raced
    /// against the wake-up. True when woken; false when the timeout passed first or the task was
    /// cancelled. Either way the signal keeps working, and a wake-up taken is never lost.
    @discardableResult
    public func wait(upTo timeout: Duration, on clock: any Clock<Duration>) async -> Bool {
        if clock is ContinuousClock { return await wait(upTo: timeout) }
        return await wait(orUntil: { try? await clock.sleep(for: timeout) })
    }

    /// Waits for a wake-up or for `sleep` to return, whichever comes first (a sleep until a
    /// deadline on a clock the caller chose). True when woken; false when the sleep ended first
    /// or the task was cancelled. Either way the signal keeps working, and a wake-up taken is
    /// never lost.
    @discardableResult
    public func wait(orUntil sleep: @escaping @Sendable () async -> Void) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.wait() }
            group.addTask {
                await sleep()
                return false
            }
            var woken = await group.next() ?? false
            group.cancelAll()
            // The other side ends at once; a wake-up it took meanwhile still counts.
            for await other in group { woken = woken || other }
            return woken
        }
    }
}
