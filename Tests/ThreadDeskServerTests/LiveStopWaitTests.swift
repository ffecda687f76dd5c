import Testing
import TestSupport
@testable import ThreadDeskServer

/// At the stop the hub waits for its streams' connections to close until the stop's shared drain
/// is over (`SHUTDOWN_GRACE_SECONDS` less its last second, counted from the first part to hear of
/// the stop), not a fixed 5 s: a replica ending many streams on a busy machine has the grace, and
/// the stages after the hub keep their second.
@Suite("Live: the hub's wait at the stop")
struct LiveStopWaitTests {
    private static func hub(drain: ShutdownDrain?, time: ServerTime) -> LiveHub {
        LiveHub(settings: .init(), bus: nil, metrics: ServerMetrics(), logger: testLogger(), time: time, drain: drain)
    }

    @Test func theWaitIsWhatIsLeftOfTheDrain() {
        let clock = ManualClock()
        let time = ServerTime.driven(by: clock)
        let configuration = ServerConfiguration(
            discordToken: "t", discordAPIURL: "http://127.0.0.1:1", guildID: "1", forumChannelID: "2", appKey: "app")
        var graced = configuration
        graced.shutdownGrace = .seconds(30)
        let drain = ShutdownDrain(graced.shutdownDrain, time: time)
        let hub = Self.hub(drain: drain, time: time)
        // Before the stop: the whole drain (the grace less its last second).
        #expect(hub.stopWait == .seconds(29))
        drain.begin()
        clock.advance(by: .seconds(12))
        // The listeners and the gateway took 12 s of it: the hub has the rest, not 5 s.
        #expect(hub.stopWait == .seconds(17))
        clock.advance(by: .seconds(40))
        #expect(hub.stopWait == .zero)
    }

    @Test func aHubMadeApartWaitsFiveSeconds() {
        #expect(Self.hub(drain: nil, time: .system).stopWait == .seconds(5))
    }
}
