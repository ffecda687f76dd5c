import Testing
import TestSupport
@testable import ThreadDeskServer

/// At the stop the hub waits for its streams' connections to close for half of what is left of the
/// stop's shared drain (`SHUTDOWN_GRACE_SECONDS` less its last second, counted from the first part
/// to hear of the stop), not a fixed 5 s: a longer grace gives the streams longer, and the stages
/// after the hub keep the other half.
@Suite("Live: the hub's wait at the stop")
struct LiveStopWaitTests {
    private static func hub(drain: ShutdownDrain?, time: ServerTime) -> LiveHub {
        LiveHub(settings: .init(), bus: nil, metrics: ServerMetrics(), logger: testLogger(), time: time, drain: drain)
    }

    @Test func theWaitIsHalfOfWhatIsLeftOfTheDrain() {
        let clock = ManualClock()
        let time = ServerTime.driven(by: clock)
        let configuration = ServerConfiguration(
            discordToken: "t", discordAPIURL: "http://127.0.0.1:1", guildID: "1", forumChannelID: "2", appKey: "app")
        var graced = configuration
        graced.shutdownGrace = .seconds(30)
        let drain = ShutdownDrain(graced.shutdownDrain, time: time)
        let hub = Self.hub(drain: drain, time: time)
        // Before the stop: half the drain (the grace less its last second).
        #expect(hub.stopWait == .milliseconds(14_500))
        drain.begin()
        clock.advance(by: .seconds(12))
        // The listeners and the gateway took 12 s of it: the hub has half of the rest, not 5 s.
        #expect(hub.stopWait == .milliseconds(8_500))
        clock.advance(by: .seconds(40))
        #expect(hub.stopWait == .zero)
    }

    @Test func aHubMadeApartWaitsFiveSeconds() {
        #expect(Self.hub(drain: nil, time: .system).stopWait == .seconds(5))
    }
}
