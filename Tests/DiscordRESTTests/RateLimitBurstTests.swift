import DiscordEmulator
import DiscordREST
import Synchronization
import TestSupport
import Testing

@Suite("Bursts against the emulator's rate limits", .timeLimit(.minutes(2)))
struct RateLimitBurstTests {
    /// Discord's windows scaled down so the burst takes seconds: 5 posts per 250 ms per thread,
    /// 50 requests per 200 ms in all.
    static var emulator: DiscordEmulator.Configuration {
        var configuration = DiscordEmulator.Configuration()
        configuration.messagePostLimit = .init(limit: 5, window: .milliseconds(250))
        configuration.threadCreateLimit = .init(limit: 10, window: .milliseconds(250))
        configuration.defaultRouteLimit = .init(limit: 50, window: .milliseconds(100))
        configuration.globalLimit = .init(limit: 50, window: .milliseconds(200))
        return configuration
    }

    /// The burst runs on a clock the test moves: it moves only once every request has its
    /// answer or waits (on the clock, or on a bucket's first answer), and then to the next
    /// moment a request waits for. So the times below are the rate limits' own, however slow
    /// the machine is, and the same on every run.
    @Test func sixtyIntoOneThreadAndThreeHundredAcrossThirtyWithoutA429() async throws {
        let clock = ManualClock()
        try await withDiscord(clock: clock, emulator: Self.emulator, client: { $0.rateLimits.globalWindow = .milliseconds(200) }) {
            emulator, client, endpoints in
            let threads = try await clock.drive {
                var threads: [String] = []
                for index in 0...30 {
                    threads.append(try await client.startForumThread(in: endpoints.forumChannelID, .named("t\(index)", "start")).channel.id)
                }
                return threads
            }
            let busy = threads[0]
            let quiet = Array(threads.dropFirst())
            let total = 60 + quiet.count * 10
            let answered = Answered()
            let started = clock.now
            async let times = withThrowingTaskGroup(of: (Bool, Duration).self) { group in
                for index in 0..<60 {
                    group.addTask {
                        _ = try await client.createMessage(in: busy, .init(content: "busy \(index)", nonce: "b\(index)"))
                        answered.add()
                        return (true, started.duration(to: clock.now))
                    }
                }
                for (threadIndex, thread) in quiet.enumerated() {
                    for index in 0..<10 {
                        group.addTask {
                            _ = try await client.createMessage(in: thread, .init(content: "quiet \(threadIndex)-\(index)", nonce: "q\(threadIndex)-\(index)"))
                            answered.add()
                            return (false, started.duration(to: clock.now))
                        }
                    }
                }
                var busyTime = Duration.zero
                var quietTime = Duration.zero
                for try await (isBusy, finished) in group {
                    if isBusy { busyTime = max(busyTime, finished) } else { quietTime = max(quietTime, finished) }
                }
                return (busyTime, quietTime)
            }
            while answered.count < total {
                // Read in this order, nothing is counted twice and no request is missed: one that
                // is answered or sleeps stays so until the clock moves, and a held-back one is
                // released only by an answer that was not yet counted.
                try await eventually("every request answered or waiting", timeout: .seconds(60)) {
                    let done = answered.count
                    let sleeping = clock.sleeperCount
                    let heldBack = await client.rateLimiter.waitingForDiscovery
                    return done == total || done + sleeping + heldBack == total
                }
                if answered.count < total { try clock.advanceToNextDeadline() }
            }
            let (busyTime, quietTime) = try await times
            #expect(emulator.counters.globalRateLimited == 0)
            #expect(emulator.counters.rateLimited == 0)
            let busyPosts = emulator.messages(inThread: busy).filter { $0.content.hasPrefix("busy ") }
            #expect(busyPosts.count == 60)
            #expect(Set(busyPosts.map(\.content)).count == 60)
            for (threadIndex, thread) in quiet.enumerated() {
                let posts = emulator.messages(inThread: thread).filter { $0.content.hasPrefix("quiet \(threadIndex)-") }
                #expect(posts.count == 10)
                #expect(Set(posts.map(\.content)).count == 10)
            }
            // 60 posts at 5 per 250 ms need 11 full windows; the quiet threads need one window each,
            // and share the global limit (360 posts at 50 per 200 ms) with the busy one.
            #expect(busyTime >= .milliseconds(2750))
            #expect(quietTime < busyTime * 0.6, "quiet threads waited behind the busy one: \(quietTime) vs \(busyTime)")
        }
    }
}

/// How many requests of the burst have their answer.
private final class Answered: Sendable {
    private let value = Mutex(0)
    var count: Int { value.withLock { $0 } }
    func add() { value.withLock { $0 += 1 } }
}
