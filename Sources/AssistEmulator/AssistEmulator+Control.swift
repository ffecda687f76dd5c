import Deadlines
import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat
import Synchronization

/// The control API: over HTTP under `/_emulator` for the sandbox and non-Swift tools, and the
/// same in Swift for tests.
extension AssistEmulator {
    public var recordedRequests: [RecordedRequest] { state.withLock { $0.requests } }
    public var counters: Counters { state.withLock { $0.counters } }

    /// Returns once `condition` holds for the emulator (its requests, its counters), checked as
    /// requests are recorded, held and answered; throws `DeadlineExceeded` past `timeout`. No polling.
    public func waitUntil(
        _ what: String, timeout: Duration = .seconds(120), isolation: isolated (any Actor)? = #isolation,
        _ condition: (AssistEmulator) -> Bool
    ) async throws {
        try await observers.wait(for: what, timeout: timeout) { condition(self) }
    }

    struct ScriptRequest: Decodable { var outcomes: [Outcome] }
    struct OutcomeRequest: Decodable { var outcome: Outcome? }

    func addControlRoutes(to router: Router<BasicRequestContext>) {
        let control = router.group("/_emulator")
        control.get("/info") { _, _ in Self.encode(await self.endpoints()) }
        control.get("/requests") { _, _ in Self.encode(self.recordedRequests) }
        control.get("/counters") { _, _ in Self.encode(self.counters) }
        control.post("/script") { request, _ in
            await self.decodeControl(request, as: ScriptRequest.self) { body in
                self.script(body.outcomes)
                return ["scripted": self.state.withLock { $0.script.count }]
            }
        }
        control.post("/outcome") { request, _ in
            await self.decodeControl(request, as: OutcomeRequest.self) { body in
                self.setPermanentOutcome(body.outcome)
                return ["permanent": body.outcome == nil ? 0 : 1]
            }
        }
        control.post("/release") { _, _ in Self.encode(["released": self.release()]) }
        control.post("/reset") { _, _ in
            self.reset()
            return Self.encode(["reset": 1])
        }
    }

    /// Decodes a control body (small: 64 KiB at most), or answers 400 saying what was wrong.
    private func decodeControl<Body: Decodable>(
        _ request: Request, as type: Body.Type, _ action: (Body) -> [String: Int]
    ) async -> Response {
        guard let data = try? Data(buffer: await request.body.collect(upTo: 1 << 16)) else {
            return Self.response(APIFailure(status: 413, message: "Control bodies are 64 KiB at most.", type: "invalid_request_error"))
        }
        do {
            return Self.encode(action(try JSONDecoder().decode(Body.self, from: data)))
        } catch {
            return Self.response(APIFailure(status: 400, message: "Invalid control body: \(error)", type: "invalid_request_error"))
        }
    }

    static func encode(_ value: some Encodable) -> Response {
        response(json: Wire.encode(value))
    }
}
