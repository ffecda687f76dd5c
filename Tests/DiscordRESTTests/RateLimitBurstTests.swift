import DiscordEmulator
import DiscordREST
import Testing

@Suite("Bursts against the emulator's rate limits")
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

    @Test func sixtyIntoOneThreadAndThreeHundredAcrossThirtyWithoutA429() async throws {
        try await withDiscord(emulator: Self.emulator, client: { $0.rateLimits.globalWindow = .milliseconds(200) }) {
            emulator, client, endpoints in
            var threads: [String] = []
            for index in 0...30 {
                threads.append(try await client.startForumThread(in: endpoints.forumChannelID, .named("t\(index)", "start")).channel.id)
            }
            let busy = threads[0]
            let quiet = Array(threads.dropFirst())
            let clock = ContinuousClock()
            let started = clock.now
            let (busyTime, quietTime) = try await withThrowingTaskGroup(of: (Bool, Duration).self) { group in
                for index in 0..<60 {
                    group.addTask {
                        _ = try await client.createMessage(in: busy, .init(content: "busy \(index)", nonce: "b\(index)"))
                        return (true, started.duration(to: clock.now))
                    }
                }
                for (threadIndex, thread) in quiet.enumerated() {
                    for index in 0..<10 {
                        group.addTask {
                            _ = try await client.createMessage(in: thread, .init(content: "quiet \(threadIndex)-\(index)", nonce: "q\(threadIndex)-\(index)"))
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
            // 60 posts at 5 per 250 ms need 11 full windows; the quiet threads need one window each.
            #expect(busyTime >= .milliseconds(2750))
            #expect(quietTime < busyTime * 0.6, "quiet threads waited behind the busy one: \(quietTime) vs \(busyTime)")
        }
    }
}
