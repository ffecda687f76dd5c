import DiscordGateway
import DiscordREST
import Testing

@Suite("Gateway state machine")
struct GatewayStateMachineTests {
    static let hello: JSON = ["op": 10, "d": ["heartbeat_interval": 1000], "s": nil, "t": nil]

    static func ready(sequence: Int = 1) -> JSON {
        ["op": 0, "s": JSON(sequence), "t": "READY", "d": ["session_id": "abc", "resume_gateway_url": "wss://resume.example", "v": 10]]
    }

    static func dispatch(_ type: String, _ sequence: Int) -> JSON {
        ["op": 0, "s": JSON(sequence), "t": .string(type), "d": ["id": "1"]]
    }

    func machine(budget: Int = 10, identifySpacing: Duration = .seconds(2)) -> GatewayStateMachine {
        GatewayStateMachine(
            token: "TOKEN", gatewayURL: "wss://gateway.example", identifyBudget: budget, backoffBase: .seconds(1), backoffCap: .seconds(8),
            identifySpacing: identifySpacing, random: { 0.5 })
    }

    @Test func helloLeadsToAJitteredHeartbeatAndIdentify() {
        var machine = machine()
        let actions = machine.received(Self.hello)
        #expect(actions.first == .startHeartbeats(first: .milliseconds(500), interval: .seconds(1)))
        guard case .send(let identify) = actions.last else { Issue.record("no identify"); return }
        #expect(identify["op"] == 2)
        #expect(identify["d"]?["token"] == "TOKEN")
        #expect(identify["d"]?["intents"] == JSON(1 | 1 << 9 | 1 << 11 | 1 << 15))
        #expect(machine.identifiesRemaining == 9)
    }

    /// Found by the gateway fuzz target: a negative interval asked for heartbeats as fast as the loop runs.
    @Test func aHeartbeatIntervalOutsideReasonIsClamped() {
        for (sent, expected) in [(-5, Duration.milliseconds(100)), (0, .milliseconds(100)), (86_400_000, .seconds(600))] {
            var machine = machine()
            let actions = machine.received(["op": 10, "d": ["heartbeat_interval": JSON(sent)]])
            guard case .startHeartbeats(_, let interval) = actions.first else { Issue.record("no heartbeats for \(sent)"); continue }
            #expect(interval == expected, "\(sent)")
        }
    }

    @Test func readyStartsASessionAndSignalsAGap() {
        var machine = machine()
        _ = machine.received(Self.hello)
        let actions = machine.received(Self.ready())
        #expect(actions == [.dispatch(type: "READY", data: Self.ready()["d"]!), .gap])
        #expect(machine.session == .init(id: "abc", resumeURL: "wss://resume.example", sequence: 1))
        _ = machine.received(Self.dispatch("MESSAGE_CREATE", 2))
        #expect(machine.heartbeatDue() == [.send(["op": 1, "d": 2])])
    }

    @Test func aMissedAckMeansAZombieToCloseAndResume() {
        var machine = machine()
        _ = machine.received(Self.hello)
        _ = machine.received(Self.ready())
        #expect(machine.heartbeatDue() == [.send(["op": 1, "d": 1])])
        _ = machine.received(["op": 11])
        #expect(machine.heartbeatDue() == [.send(["op": 1, "d": 1])])
        let zombie = machine.heartbeatDue()
        #expect(zombie == [.close(code: 4901, then: .init(url: "wss://resume.example", resume: true, after: .zero))])
    }

    @Test func resumingSendsTheSessionAndSequenceAndResumedIsNoGap() {
        var machine = machine()
        _ = machine.received(Self.hello)
        _ = machine.received(Self.ready())
        _ = machine.received(Self.dispatch("MESSAGE_CREATE", 7))
        #expect(machine.received(["op": 7, "d": nil]) == [.close(code: 4900, then: .init(url: "wss://resume.example", resume: true, after: .zero))])
        let actions = machine.received(Self.hello)
        #expect(actions.last == .send(["op": 6, "d": ["token": "TOKEN", "session_id": "abc", "seq": 7]]))
        #expect(machine.identifiesRemaining == 9)
        #expect(machine.received(Self.dispatch("RESUMED", 8)) == [.dispatch(type: "RESUMED", data: ["id": "1"])])
    }

    @Test func invalidSessionResumesOrIdentifiesAfterAPause() {
        var machine = machine()
        _ = machine.received(Self.hello)
        _ = machine.received(Self.ready())
        #expect(machine.received(["op": 9, "d": true]) == [.close(code: 4900, then: .init(url: "wss://resume.example", resume: true, after: .zero))])
        // Not resumable: forget the session, wait 1–5 s (3 s with this jitter), identify on the main URL.
        #expect(machine.received(["op": 9, "d": false]) == [.close(code: 4900, then: .init(url: "wss://gateway.example", resume: false, after: .seconds(3)))])
        #expect(machine.session == nil)
        guard case .send(let identify) = machine.received(Self.hello).last else { Issue.record("no identify"); return }
        #expect(identify["op"] == 2)
    }

    @Test func identifiesAreNeverCloserThanTheSpacingDiscordAllows() {
        var machine = machine(identifySpacing: .seconds(5))
        #expect(machine.firstConnect.after == .zero)
        _ = machine.received(Self.hello)
        // The session is refused at once (4009, not resumable): the backoff alone says 0.5–1 s, but
        // the next identify waits out the 5 s of max_concurrency.
        #expect(machine.connectionClosed(code: 4009) == .reconnect(.init(url: "wss://gateway.example", resume: false, after: .seconds(5))))
        // A resume is not an identify: it goes at once.
        _ = machine.received(Self.hello)
        _ = machine.received(Self.ready())
        #expect(machine.received(["op": 7, "d": nil]) == [.close(code: 4900, then: .init(url: "wss://resume.example", resume: true, after: .zero))])
    }

    @Test(arguments: [UInt16(4004), 4010, 4011, 4012, 4013, 4014])
    func fatalCloseCodesStopForGood(code: UInt16) {
        var machine = machine()
        guard case .fatal(let message) = machine.connectionClosed(code: code) else { Issue.record("\(code) not fatal"); return }
        #expect(message.contains(String(code)))
    }

    @Test func otherDropsReconnectWithGrowingBackoff() {
        var machine = machine()
        _ = machine.received(Self.hello)
        _ = machine.received(Self.ready())
        #expect(machine.connectionClosed(code: nil) == .reconnect(.init(url: "wss://resume.example", resume: true, after: .milliseconds(750))))
        #expect(machine.connectionClosed(code: 1006) == .reconnect(.init(url: "wss://resume.example", resume: true, after: .milliseconds(1500))))
        #expect(machine.connectionClosed(code: 4000) == .reconnect(.init(url: "wss://resume.example", resume: true, after: .seconds(3))))
        #expect(machine.connectionClosed(code: 4000) == .reconnect(.init(url: "wss://resume.example", resume: true, after: .seconds(6))))
        #expect(machine.connectionClosed(code: 4000) == .reconnect(.init(url: "wss://resume.example", resume: true, after: .seconds(6))))
        // Session timed out: identify again.
        #expect(machine.connectionClosed(code: 4009) == .reconnect(.init(url: "wss://gateway.example", resume: false, after: .seconds(6))))
        // A successful session resets the backoff.
        _ = machine.received(Self.hello)
        _ = machine.received(Self.ready())
        #expect(machine.connectionClosed(code: nil) == .reconnect(.init(url: "wss://resume.example", resume: true, after: .milliseconds(750))))
    }

    @Test func theIdentifyBudgetIsRespectedAndRefilled() {
        var machine = machine(budget: 1)
        #expect(!machine.needsIdentifyBudget)
        _ = machine.received(Self.hello)
        _ = machine.received(["op": 9, "d": false])
        // The budget is spent: the machine says so before the next connection...
        #expect(machine.needsIdentifyBudget)
        // ...and, reaching HELLO anyway (a stale budget), closes instead of identifying.
        let actions = machine.received(Self.hello)
        #expect(!actions.contains { if case .send(let payload) = $0 { return payload["op"] == 2 } else { return false } })
        #expect(actions.contains { if case .close(4900, _) = $0 { return true } else { return false } })
        machine.refillIdentifies(5)
        #expect(!machine.needsIdentifyBudget)
        #expect(machine.received(Self.hello).contains { if case .send(let payload) = $0 { return payload["op"] == 2 } else { return false } })
        #expect(machine.identifiesRemaining == 4)
    }

    @Test func aRequestedHeartbeatIsSentAtOnce() {
        var machine = machine()
        _ = machine.received(Self.hello)
        _ = machine.received(Self.ready(sequence: 4))
        #expect(machine.received(["op": 1, "d": nil]) == [.send(["op": 1, "d": 4])])
    }
}
