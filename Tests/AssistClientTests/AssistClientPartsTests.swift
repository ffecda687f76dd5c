import Foundation
import Testing
import TestSupport

@testable import AssistClient

/// The pieces that need no provider: the attempt's watchdog and `Retry-After`.
@Suite(.timeLimit(.minutes(2)))
struct AssistClientPartsTests {
    @Test func aStreamQuietForTheIdleTimeIsCut() async throws {
        let clock = ManualClock()
        let progress = BodyProgress(clock: clock)
        let watch = Task { await progress.watch(until: clock.now.advanced(by: .seconds(20)), idle: .seconds(10)) }
        try await clock.changes.wait(for: "the watchdog asleep until the attempt's deadline") { _ in clock.sleepsLeft == [.seconds(20)] }
        clock.advance(by: .seconds(5))
        progress.streamBegan()
        // Woken by the stream's start, it now counts idleness from there.
        try await clock.changes.wait(for: "the watchdog counting idleness") { _ in clock.sleepsLeft == [.seconds(10)] }
        clock.advance(by: .seconds(6))
        progress.moved()
        clock.advance(by: .seconds(4))
        // Quiet for 4 s only: it sleeps on, until 10 s after the last piece (or the deadline).
        try await clock.changes.wait(for: "the watchdog asleep again") { _ in clock.sleepsLeft == [.seconds(5)] }
        clock.advance(by: .seconds(5))
        #expect(await watch.value?.failure == .timeout)
    }

    @Test func quietPastTheIdleTimeBeforeTheDeadlineIsACut() async throws {
        let clock = ManualClock()
        let progress = BodyProgress(clock: clock)
        progress.streamBegan()
        let watch = Task { await progress.watch(until: clock.now.advanced(by: .seconds(20)), idle: .seconds(10)) }
        try await clock.changes.wait(for: "the watchdog counting idleness") { _ in clock.sleepsLeft == [.seconds(10)] }
        clock.advance(by: .seconds(10))
        #expect(await watch.value?.failure == .cutStream)
    }

    @Test func retryAfterIsReadInSecondsMillisecondsOrAsAnHTTPDate() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(AssistClient.retryAfter(milliseconds: nil, header: "2", now: now) == .seconds(2))
        #expect(AssistClient.retryAfter(milliseconds: nil, header: "1.5", now: now) == .milliseconds(1500))
        #expect(AssistClient.retryAfter(milliseconds: "250", header: "2", now: now) == .milliseconds(250))
        // 1_700_000_000 is Tue, 14 Nov 2023 22:13:20 GMT.
        #expect(AssistClient.retryAfter(milliseconds: nil, header: "Tue, 14 Nov 2023 22:13:50 GMT", now: now) == .seconds(30))
        #expect(AssistClient.retryAfter(milliseconds: nil, header: "Tuesday, 14-Nov-23 22:13:50 GMT", now: now) == .seconds(30))
        #expect(AssistClient.retryAfter(milliseconds: nil, header: "Tue Nov 14 22:13:50 2023", now: now) == .seconds(30))
        #expect(AssistClient.retryAfter(milliseconds: nil, header: "Tue, 14 Nov 2023 22:00:00 GMT", now: now) == .zero)
        #expect(AssistClient.retryAfter(milliseconds: nil, header: "soon", now: now) == nil)
        #expect(AssistClient.retryAfter(milliseconds: nil, header: "-1", now: now) == nil)
        #expect(AssistClient.retryAfter(milliseconds: nil, header: nil, now: now) == nil)
    }

    @Test func aStreamWithAnErrorChunkIsMalformed() {
        var stream = CompletionStream(maxTextBytes: 1 << 20)
        let failure = stream.feed(Array("data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"code\":500}}\n\n".utf8))
        #expect(failure == .malformed("the stream carried an error (500)"))
    }
}
