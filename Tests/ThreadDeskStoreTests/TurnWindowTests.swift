import Testing
import TestSupport
import ThreadDeskStore

/// Turns counted as Discord counts a bucket, on a clock the test passes.
@Suite("Turn windows")
struct TurnWindowTests {
    /// Ten turns in a 10 s window with 0.5 s of lateness: given in the first 9.5 s, then none until
    /// 10.5 s after the window opened, when the next opens with its first turn.
    @Test func turnsAreGivenEarlyInTheWindowAndTheNextOpensAfterItsClose() {
        let windows = TurnWindows()
        let start = ContinuousClock.now
        let (window, lateness) = (Duration.seconds(10), Duration.milliseconds(500))
        for index in 0..<9 {
            #expect(windows.take("forum", limit: 10, window: window, lateness: lateness, now: start + .seconds(index)) == nil)
        }
        // Past `window - lateness`: a request now might land in Discord's next window.
        #expect(windows.take("forum", limit: 10, window: window, lateness: lateness, now: start + .milliseconds(9_600)) == .milliseconds(900))
        #expect(windows.take("forum", limit: 10, window: window, lateness: lateness, now: start + .milliseconds(9_400)) == nil)
        // The limit given: nothing more in this window.
        #expect(windows.take("forum", limit: 10, window: window, lateness: lateness, now: start + .milliseconds(9_450)) == .milliseconds(1_050))
        let next = start + .milliseconds(10_500)
        #expect(windows.take("forum", limit: 10, window: window, lateness: lateness, now: next) == nil)
        for _ in 0..<9 { #expect(windows.take("forum", limit: 10, window: window, lateness: lateness, now: next) == nil) }
        #expect(windows.take("forum", limit: 10, window: window, lateness: lateness, now: next) == .milliseconds(10_500))
    }

    /// A process that has not heard Discord's headers yet asks as 1 a second: it never opens a
    /// window early on one a process that knows the bucket opened, nor takes a turn in it.
    @Test func aProcessThatKnowsLessNeverClosesAWindowEarly() {
        let windows = TurnWindows()
        let start = ContinuousClock.now
        let lateness = Duration.milliseconds(500)
        for _ in 0..<3 { #expect(windows.take("forum", limit: 10, window: .seconds(10), lateness: lateness, now: start) == nil) }
        // A second and a half later, long past an unknown bucket's second: the window is the known one.
        #expect(windows.take("forum", limit: 1, window: .seconds(1), lateness: lateness, now: start + .milliseconds(1_500)) == .seconds(9))
        for _ in 0..<7 {
            #expect(windows.take("forum", limit: 10, window: .seconds(10), lateness: lateness, now: start + .seconds(2)) == nil)
        }
        #expect(windows.take("forum", limit: 10, window: .seconds(10), lateness: lateness, now: start + .seconds(2)) != nil)
        // The window it knew stays known: the unknowing process's next window is as long.
        #expect(windows.take("forum", limit: 1, window: .seconds(1), lateness: lateness, now: start + .milliseconds(10_500)) == nil)
        #expect(windows.take("forum", limit: 10, window: .seconds(10), lateness: lateness, now: start + .seconds(12)) == nil)
        #expect(windows.take("forum", limit: 1, window: .seconds(1), lateness: lateness, now: start + .seconds(13)) == .seconds(8))
    }

    /// Whatever the order turns are asked in, no stretch as long as Discord's window holds more
    /// than the limit of requests, when each reaches Discord up to `lateness` after its turn and
    /// Discord's windows open at the first request after the last closed.
    @Test(arguments: [0, 1, 2, 3, 4])
    func noDiscordWindowGetsMoreThanTheLimit(seed: Int) {
        var random = SeededRandom(seed: UInt64(seed))
        let windows = TurnWindows()
        let start = ContinuousClock.now
        let (window, lateness, limit) = (Duration.seconds(2), Duration.milliseconds(250), 5)
        var arrivals: [Duration] = []
        var now = Duration.zero
        while now < .seconds(60) {
            now += .milliseconds(Int64(random.next() % 400))
            if windows.take("forum", limit: limit, window: window, lateness: lateness, now: start + now) == nil {
                arrivals.append(now + .milliseconds(Int64(random.next() % 251)))
            }
        }
        arrivals.sort()
        // Discord's fixed windows, as the emulator keeps them.
        var opened: Duration?
        var used = 0
        for arrival in arrivals {
            if let at = opened, arrival < at + window {
                used += 1
                #expect(used <= limit, "at \(arrival): \(used) in the window opened at \(at)")
            } else {
                opened = arrival
                used = 1
            }
        }
        #expect(arrivals.count > 60, "turns were given throughout: \(arrivals.count)")
    }
}
