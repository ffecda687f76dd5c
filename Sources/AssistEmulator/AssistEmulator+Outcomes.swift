import Deadlines
import Foundation
import ServiceLifecycle
import Synchronization

extension AssistEmulator {
    /// How the emulator answers an accepted completion request.
    ///
    /// Over the control API an outcome is an object named by `kind`: `{"kind": "answer", "text": …}`,
    /// `{"kind": "status", "status": 429, "retryAfter": 2, "code": "rate_limit_exceeded"}`,
    /// `{"kind": "cutStream", "afterChunks": 2}`, `{"kind": "slow", "milliseconds": 500}`,
    /// `{"kind": "raw", "status": 200, "contentType": "application/json", "body": …}`, or just the
    /// kind for the others.
    public enum Outcome: Sendable, Hashable {
        /// The default, deterministic: `"(<model>) "` and the first 200 characters of the last
        /// `user` message.
        case rule
        case answer(String)
        /// Every message's content, system prompt included, one per line: what reached the model.
        case echo
        /// An error in the provider's shape, with `Retry-After` (seconds) when given.
        case status(Int, retryAfter: Int? = nil, code: String? = nil)
        /// A 200 JSON body (or stream of chunks) without `choices`.
        case malformed
        /// A 200 body that is not JSON.
        case garbage
        /// A stream closed after this many chunks, with no `[DONE]`; a plain body cut half-way.
        case cutStream(afterChunks: Int)
        /// Held until `release()`, `reset()`, shutdown or the hold limit, then answered by the rule.
        case hang
        /// The rule's answer after a real delay: for the sandbox, never for tests.
        case slow(milliseconds: Int)
        /// Exactly this body, as another kind of server would answer (Ollama's `{"error": "…"}`,
        /// plain JSON to a streamed request, a completion without `usage`).
        case raw(status: Int, contentType: String, body: String)

        /// The name recorded and counted.
        var name: String {
            switch self {
            case .rule: "rule"
            case .answer: "answer"
            case .echo: "echo"
            case .status(let status, _, _): "status \(status)"
            case .malformed: "malformed"
            case .garbage: "garbage"
            case .cutStream: "cutStream"
            case .hang: "hang"
            case .slow: "slow"
            case .raw: "raw"
            }
        }

        var isFault: Bool {
            switch self {
            case .status, .malformed, .garbage, .cutStream: true
            case .rule, .answer, .echo, .hang, .slow, .raw: false
            }
        }
    }

    /// The next requests get these outcomes, in order; then the permanent one, or the rule.
    public func script(_ outcomes: [Outcome]) {
        state.withLock { $0.script.append(contentsOf: outcomes) }
    }

    /// Every request gets this outcome (ahead of any script) until cleared with nil.
    public func setPermanentOutcome(_ outcome: Outcome?) {
        state.withLock { $0.permanent = outcome }
    }

    /// Lets every held request go (each is then answered by the rule); returns how many. A request
    /// is held once `counters.held` counts it: wait for that before releasing.
    @discardableResult
    public func release() -> Int {
        let holds = state.withLock { state in
            defer { state.holds = [:] }
            return state.holds
        }
        for hold in holds.values { hold.resume() }
        return holds.count
    }

    /// Forgets scripts, the permanent outcome, recorded requests and counters; releases held requests.
    public func reset() {
        let holds = state.withLock { state in
            defer { state = State() }
            return state.holds
        }
        for hold in holds.values { hold.resume() }
        observers.changed()
    }

    func nextOutcome() -> Outcome {
        state.withLock { state in
            if let permanent = state.permanent { return permanent }
            return state.script.isEmpty ? .rule : state.script.removeFirst()
        }
    }

    /// Holds request `id` until it is released, the emulator shuts down, or the hold limit passes.
    func hold(_ id: Int) async {
        let registered = { @Sendable (continuation: CheckedContinuation<Void, any Error>) in
            self.state.withLock { state in
                state.holds[id] = continuation
                state.counters.held += 1
            }
            self.observers.changed()
        }
        let abandon = { @Sendable in
            let held = self.state.withLock { $0.holds.removeValue(forKey: id) }
            held?.resume(throwing: CancellationError())
        }
        try? await cancelWhenGracefulShutdown {
            try await withTimeout(self.configuration.holdLimit, "held request \(id)") {
                try await suspendCancellably(register: registered, abandon: abandon)
            }
        }
        state.withLock { state in
            // `reset()` may have replaced the counters meanwhile.
            state.counters.held = max(0, state.counters.held - 1)
            state.counters.released += 1
        }
        observers.changed()
    }
}

extension AssistEmulator.Outcome: Codable {
    private enum CodingKeys: String, CodingKey {
        case kind, text, status, retryAfter, code, afterChunks, milliseconds, contentType, body
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let kind = try container.decode(String.self, forKey: .kind)
        switch kind {
        case "rule": self = .rule
        case "answer": self = .answer(try container.decode(String.self, forKey: .text))
        case "echo": self = .echo
        case "status":
            self = .status(
                try container.decode(Int.self, forKey: .status), retryAfter: try container.decodeIfPresent(Int.self, forKey: .retryAfter),
                code: try container.decodeIfPresent(String.self, forKey: .code))
        case "malformed": self = .malformed
        case "garbage": self = .garbage
        case "cutStream": self = .cutStream(afterChunks: try container.decode(Int.self, forKey: .afterChunks))
        case "hang": self = .hang
        case "slow": self = .slow(milliseconds: try container.decode(Int.self, forKey: .milliseconds))
        case "raw":
            self = .raw(
                status: try container.decode(Int.self, forKey: .status),
                contentType: try container.decodeIfPresent(String.self, forKey: .contentType) ?? "application/json",
                body: try container.decode(String.self, forKey: .body))
        default:
            throw DecodingError.dataCorruptedError(forKey: .kind, in: container, debugDescription: "unknown outcome kind \(kind)")
        }
        if case .status(let status, _, _) = self, !(400...599).contains(status) {
            throw DecodingError.dataCorruptedError(forKey: .status, in: container, debugDescription: "an error status is 400-599")
        }
        if case .raw(let status, _, _) = self, !(200...599).contains(status) {
            throw DecodingError.dataCorruptedError(forKey: .status, in: container, debugDescription: "a status is 200-599")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .rule: try container.encode("rule", forKey: .kind)
        case .answer(let text):
            try container.encode("answer", forKey: .kind)
            try container.encode(text, forKey: .text)
        case .echo: try container.encode("echo", forKey: .kind)
        case .status(let status, let retryAfter, let code):
            try container.encode("status", forKey: .kind)
            try container.encode(status, forKey: .status)
            try container.encodeIfPresent(retryAfter, forKey: .retryAfter)
            try container.encodeIfPresent(code, forKey: .code)
        case .malformed: try container.encode("malformed", forKey: .kind)
        case .garbage: try container.encode("garbage", forKey: .kind)
        case .cutStream(let afterChunks):
            try container.encode("cutStream", forKey: .kind)
            try container.encode(afterChunks, forKey: .afterChunks)
        case .hang: try container.encode("hang", forKey: .kind)
        case .slow(let milliseconds):
            try container.encode("slow", forKey: .kind)
            try container.encode(milliseconds, forKey: .milliseconds)
        case .raw(let status, let contentType, let body):
            try container.encode("raw", forKey: .kind)
            try container.encode(status, forKey: .status)
            try container.encode(contentType, forKey: .contentType)
            try container.encode(body, forKey: .body)
        }
    }
}
