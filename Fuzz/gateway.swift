// Fuzz target: the gateway protocol's state machine fed whatever a gateway could send. Each line
// of the input is one frame; a line that is not JSON stands for the connection closing (its first
// byte picks the close code). Whatever arrives, the machine asks for sane timers and close codes.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGateway(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    var machine = GatewayStateMachine(
        token: "token", gatewayURL: "wss://gateway.example", identifyBudget: 3, random: { 0.5 })
    for line in data.split(separator: 0x0A, omittingEmptySubsequences: false) {
        if let payload = try? JSON.parse(Data(line)) {
            check(machine.received(payload))
            check(machine.heartbeatDue())
        } else {
            let code: UInt16? = line.first.map { 4000 + UInt16($0) % 20 }
            if case .reconnect(let connect) = machine.connectionClosed(code: code) { check(connect) }
        }
        precondition(machine.identifiesRemaining >= 0, "identified beyond the budget")
    }
    return 0
}

func check(_ actions: [GatewayStateMachine.Action]) {
    for action in actions {
        switch action {
        case .startHeartbeats(let first, let interval):
            precondition(interval >= .milliseconds(100) && interval <= .seconds(600), "heartbeat interval \(interval)")
            precondition(first >= .zero && first <= interval, "first heartbeat after \(first)")
        case .close(let code, let then):
            precondition((4000..<5000).contains(code), "close code \(code)")
            check(then)
        case .send, .dispatch, .gap, .fatal:
            break
        }
    }
}

func check(_ connect: GatewayStateMachine.Connect) {
    precondition(connect.after >= .zero && connect.after <= .seconds(60), "reconnect after \(connect.after)")
}
