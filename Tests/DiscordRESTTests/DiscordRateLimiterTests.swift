import TestSupport
import DiscordREST
import Testing

@Suite("Rate limiter, on a manual clock")
struct DiscordRateLimiterTests {
    typealias Limiter = DiscordRateLimiter<ManualClock>
    let route = "POST /channels/{channel_id}/messages"

    func headers(remaining: Int, limit: Int = 2, resetAfter: Duration = .seconds(5)) -> Limiter.Headers {
        .init(bucket: "abc", limit: limit, remaining: remaining, resetAfter: resetAfter)
    }

    func limiter(_ clock: ManualClock, globalLimit: Int = 50) -> Limiter {
        var configuration = Limiter.Configuration()
        configuration.safetyMargin = .zero
        configuration.globalLimit = globalLimit
        return Limiter(clock: clock, configuration: configuration)
    }

    @Test func waitsForTheBucketToResetOnceItIsSpent() async throws {
        let clock = ManualClock()
        let limiter = limiter(clock)
        let far = clock.now.advanced(by: .seconds(60))
        let first = try await limiter.acquire(route: route, major: "1", deadline: far)
        await limiter.complete(first, headers: headers(remaining: 1))
        let second = try await limiter.acquire(route: route, major: "1", deadline: far)
        await limiter.complete(second, headers: headers(remaining: 0, resetAfter: .seconds(4.5)))

        let third = Task { try await limiter.acquire(route: route, major: "1", deadline: far) }
        try await clock.waitForSleepers(1)
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(4))
        await Task.yield()
        #expect(clock.sleeperCount == 1, "still inside the window")
        clock.advance(by: .seconds(1))
        _ = try await third.value
        #expect(clock.now.offset == .seconds(5))
    }

    @Test func otherMajorParametersAreNotHeldUp() async throws {
        let clock = ManualClock()
        let limiter = limiter(clock)
        let far = clock.now.advanced(by: .seconds(60))
        for major in ["1", "2"] {
            let ticket = try await limiter.acquire(route: route, major: major, deadline: far)
            await limiter.complete(ticket, headers: headers(remaining: 0))
        }
        let busy = Task { try await limiter.acquire(route: route, major: "1", deadline: far) }
        try await clock.waitForSleepers(1)
        // While major 1 sleeps, major 3 goes at once: a deadline of now allows no waiting at all.
        let free = try await limiter.acquire(route: route, major: "3", deadline: clock.now)
        await limiter.complete(free, headers: headers(remaining: 1))
        #expect(clock.now.offset == .zero)
        #expect(clock.sleeperCount == 1, "major 1 is still held")
        clock.advance(by: .seconds(5))
        _ = try await busy.value
        #expect(clock.now.offset == .seconds(5))
    }

    @Test func oneRequestDiscoversAnUnknownBucketWhileOthersWait() async throws {
        let clock = ManualClock()
        let limiter = limiter(clock)
        let far = clock.now.advanced(by: .seconds(60))
        let first = try await limiter.acquire(route: route, major: "1", deadline: far)
        let waiting = Task { try await limiter.acquire(route: route, major: "1", deadline: far) }
        for _ in 0..<100 { await Task.yield() }
        // Discord says the bucket holds one request and it is spent: the waiter must now sleep.
        await limiter.complete(first, headers: headers(remaining: 0, limit: 1, resetAfter: .seconds(2)))
        try await clock.waitForSleepers(1)
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(2))
        _ = try await waiting.value
    }

    @Test func refusesToWaitPastTheDeadline() async throws {
        let clock = ManualClock()
        let limiter = limiter(clock)
        let ticket = try await limiter.acquire(route: route, major: "1", deadline: clock.now)
        await limiter.complete(ticket, headers: headers(remaining: 0, resetAfter: .seconds(30)))
        await #expect(throws: DiscordError.self) {
            _ = try await limiter.acquire(route: route, major: "1", deadline: clock.now.advanced(by: .seconds(10)))
        }
    }

    @Test func a429BlocksTheBucketForRetryAfter() async throws {
        let clock = ManualClock()
        let limiter = limiter(clock)
        let far = clock.now.advanced(by: .seconds(60))
        let ticket = try await limiter.acquire(route: route, major: "1", deadline: far)
        await limiter.rateLimited(ticket, retryAfter: .seconds(3), global: false, headers: headers(remaining: 0))
        let next = Task { try await limiter.acquire(route: route, major: "1", deadline: far) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(2))
        await Task.yield()
        #expect(clock.sleeperCount == 1, "still blocked before retry_after has passed")
        clock.advance(by: .seconds(1))
        _ = try await next.value
        #expect(clock.now.offset == .seconds(3))
    }

    @Test func keepsUnderTheGlobalLimit() async throws {
        let clock = ManualClock()
        let limiter = limiter(clock, globalLimit: 3)
        let far = clock.now.advanced(by: .seconds(60))
        for major in ["1", "2", "3"] {
            let ticket = try await limiter.acquire(route: route, major: major, deadline: far)
            await limiter.complete(ticket, headers: headers(remaining: 1))
        }
        let fourth = Task { try await limiter.acquire(route: route, major: "4", deadline: far) }
        try await clock.waitForSleepers(1)
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        _ = try await fourth.value
    }

    /// Interaction answers are not bound to the global limit: with it spent, one goes at once
    /// (and it spends none of it).
    @Test func interactionAnswersDoNotWaitForTheGlobalLimit() async throws {
        let clock = ManualClock()
        let limiter = limiter(clock, globalLimit: 2)
        let far = clock.now.advanced(by: .seconds(60))
        for major in ["1", "2"] {
            let ticket = try await limiter.acquire(route: route, major: major, deadline: far)
            await limiter.complete(ticket, headers: headers(remaining: 1))
        }
        let callback = "POST /interactions/{interaction_id}/{interaction_token}/callback"
        let answer = try await limiter.acquire(route: callback, major: "9", deadline: clock.now, global: false)
        await limiter.complete(answer, headers: nil)
        #expect(clock.now.offset == .zero)
        // The global window is as full as before: the next bot request still waits for it.
        let next = Task { try await limiter.acquire(route: route, major: "3", deadline: far) }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        _ = try await next.value
    }

    @Test func aGlobal429BlocksEveryRoute() async throws {
        let clock = ManualClock()
        let limiter = limiter(clock)
        let far = clock.now.advanced(by: .seconds(60))
        let ticket = try await limiter.acquire(route: route, major: "1", deadline: far)
        await limiter.rateLimited(ticket, retryAfter: .seconds(2), global: true, headers: nil)
        let other = Task { try await limiter.acquire(route: "GET /users/@me", major: "", deadline: far) }
        try await clock.waitForSleepers(1)
        // Blocked for retry_after, not less.
        await #expect(throws: DiscordError.self) {
            _ = try await limiter.acquire(route: "GET /gateway/bot", major: "", deadline: clock.now.advanced(by: .seconds(1)))
        }
        clock.advance(by: .seconds(2))
        _ = try await other.value
        #expect(clock.now.offset == .seconds(2))
    }
}
