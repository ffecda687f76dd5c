import AsyncHTTPClient
import Deadlines
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// An OpenAI-compatible chat-completions client (OpenAI, llama.cpp, vLLM, Ollama's `/v1`): one
/// completion within a deadline, retrying what a provider means as "later" (429, 500, 502, 503,
/// 504, a lost connection, a cut stream) with exponential backoff and full jitter, honouring
/// `Retry-After` when it fits in the time left. The key and the messages are never logged.
public struct AssistClient: Sendable {
    public struct Configuration: Sendable {
        /// The root holding `/chat/completions` and `/models` (`https://api.openai.com/v1`).
        public var baseURL: String
        public var model: String
        /// Sent as `Authorization: Bearer`; local servers usually need none.
        public var apiKey: String?
        /// How long one call may take in all, waits and retries included (cut to the caller's `Deadline`).
        public var deadline: Duration = .seconds(30)
        /// How long one HTTP attempt may take, its whole body included.
        public var attemptTimeout: Duration = .seconds(20)
        /// A stream that sends nothing for this long was cut.
        public var streamIdle: Duration = .seconds(10)
        public var maxAttempts = 3
        /// The first retry waits up to this long, each next one up to twice as long.
        public var backoffBase: Duration = .seconds(1)
        /// Ask for a stream: a slow local model keeps the connection busy instead of silent.
        public var stream = true
        /// The largest answer read whole, and the most text a stream may add up to.
        public var maxAnswerBytes = 1 << 20

        public init(baseURL: String, model: String, apiKey: String? = nil) {
            self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
            self.model = model
            self.apiKey = apiKey
        }
    }

    public let configuration: Configuration
    let httpClient: HTTPClient
    let clock: any Clock<Duration>
    /// Uniform in 0..<1: the jitter of each backoff.
    let random: @Sendable () -> Double
    let logger: Logger

    /// `clock` keeps every deadline and backoff (a test's manual clock drives them); `random`
    /// draws the jitter.
    public init(
        configuration: Configuration, httpClient: HTTPClient = .shared, clock: any Clock<Duration> = ContinuousClock(),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }, logger: Logger
    ) {
        self.configuration = configuration
        self.httpClient = httpClient
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    /// One completion of `request`, or why none came.
    public func complete(_ request: AssistRequest) async throws(AssistFailure) -> AssistCompletion {
        // Opened through a local: the stored existential is not opened in place (Swift 6.3).
        let clock = self.clock
        return try await complete(request, on: clock)
    }

    /// The provider's model names (`GET {baseURL}/models`): for a check that the URL, the key and
    /// the model are right.
    public func models() async throws(AssistFailure) -> [String] {
        let clock = self.clock
        return try await models(on: clock)
    }

    private func complete<C: Clock<Duration>>(_ request: AssistRequest, on clock: C) async throws(AssistFailure) -> AssistCompletion {
        let url = configuration.baseURL + "/chat/completions"
        let stream = configuration.stream
        let body: ByteBuffer
        do {
            body = ByteBuffer(data: try JSONEncoder().encode(ChatBody(request, model: configuration.model, stream: stream)))
        } catch {
            throw .malformed("the request cannot be encoded: \(error)")
        }
        let (answer, attempts) = try await tracked("assist completion") { () async throws(AssistFailure) in
            try await retrying("completion", on: clock) { deadline in
                var http = HTTPClientRequest(url: url)
                http.method = .POST
                http.headers.add(name: "Content-Type", value: "application/json")
                http.headers.add(name: "Accept", value: stream ? "text/event-stream" : "application/json")
                http.body = .bytes(body)
                return await attempt(http, on: clock, until: deadline) { response, progress in
                    await readCompletion(response, progress: progress)
                }
            }
        }
        return AssistCompletion(
            text: answer.text, finishReason: answer.finishReason, usage: Self.usage(answer.usage, prompt: request.messages, text: answer.text),
            attempts: attempts)
    }

    private func models<C: Clock<Duration>>(on clock: C) async throws(AssistFailure) -> [String] {
        let url = configuration.baseURL + "/models"
        return try await tracked("assist models") { () async throws(AssistFailure) in
            try await retrying("models", on: clock) { deadline in
                var http = HTTPClientRequest(url: url)
                http.headers.add(name: "Accept", value: "application/json")
                return await attempt(http, on: clock, until: deadline) { response, _ in
                    switch await Self.collect(response.body, limit: configuration.maxAnswerBytes) {
                    case .failure(let problem): return .failure(problem)
                    case .success(let body):
                        guard let list = try? JSONDecoder().decode(ModelList.self, from: body) else {
                            return .failure(.final(.malformed("the model list is not {data: [{id}]}")))
                        }
                        return .success(list.data.map(\.id))
                    }
                }
            }
        }.0
    }

    /// Why an attempt failed, and whether another may be made.
    struct Problem: Error {
        var failure: AssistFailure
        var retryable: Bool
        /// The provider's own wait (`Retry-After`), taken instead of the backoff.
        var retryAfter: Duration?

        static func final(_ failure: AssistFailure) -> Problem { Problem(failure: failure, retryable: false) }
        static func later(_ failure: AssistFailure, after retryAfter: Duration? = nil) -> Problem {
            Problem(failure: failure, retryable: true, retryAfter: retryAfter)
        }
    }

    /// Attempts until one succeeds, one fails for good, `maxAttempts` are made or the deadline —
    /// cut to the caller's `Deadline` — leaves no time for the next; returns the value and the
    /// attempts made. Each attempt is handed the call's deadline.
    private func retrying<C: Clock<Duration>, T>(
        _ what: String, on clock: C, _ attempt: (C.Instant) async -> Result<T, Problem>
    ) async throws(AssistFailure) -> (T, Int) {
        let deadline = clock.now.advanced(by: Deadline.capping(configuration.deadline))
        var attempts = 0
        while true {
            guard clock.now < deadline else { throw .timeout }
            attempts += 1
            let problem: Problem
            switch await attempt(deadline) {
            case .success(let value): return (value, attempts)
            case .failure(let failed): problem = failed
            }
            logger.warning(
                "Assist provider attempt failed",
                metadata: [
                    "call": "\(what)", "model": "\(configuration.model)", "attempt": "\(attempts)", "failure": "\(problem.failure)",
                    "retryable": "\(problem.retryable)",
                ])
            guard problem.retryable, attempts < configuration.maxAttempts, !Task.isCancelled else { throw problem.failure }
            let delay = problem.retryAfter ?? backoff(attempt: attempts)
            // A wait that would outlast the deadline is not begun: the caller hears at once.
            guard clock.now.advanced(by: delay) < deadline else { throw problem.failure }
            do {
                try await clock.sleep(until: clock.now.advanced(by: delay), tolerance: nil)
            } catch {
                throw problem.failure
            }
        }
    }

    /// Full jitter: uniform between zero and `backoffBase × 2^(attempt-1)`.
    private func backoff(attempt: Int) -> Duration {
        let ceiling = configuration.backoffBase * (1 << min(attempt - 1, 16))
        return ceiling * min(max(random(), 0), 1)
    }

    /// Runs `body` as a wait the process's `WaitTracker` can name.
    private func tracked<T>(_ what: String, _ body: () async throws(AssistFailure) -> T) async throws(AssistFailure) -> T {
        do {
            return try await WaitTracker.track(what) { try await body() }
        } catch let failure as AssistFailure {
            throw failure
        } catch {
            throw .unreachable("\(error)")
        }
    }
}
