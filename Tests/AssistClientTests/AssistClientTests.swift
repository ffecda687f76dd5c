import AssistClient
import AssistEmulator
import AsyncHTTPClient
import Foundation
import Testing
import TestSupport

/// The client against the emulator: retries, deadlines, refusals and odd providers' answers, with
/// every wait on a manual clock the test moves.
@Suite(.timeLimit(.minutes(2)))
struct AssistClientTests {
    typealias Harness = AssistClientHarness

    @Test(arguments: [true, false])
    func aCompletionCarriesTheProvidersTextAndUsage(stream: Bool) async throws {
        try await Harness.run(client: { $0.stream = stream }) { harness in
            let completion = try await harness.complete().get()
            #expect(completion.text == "(test-model) How do I reset my password?")
            #expect(completion.finishReason == "stop")
            #expect(completion.attempts == 1)
            let counters = harness.emulator.counters
            #expect(completion.usage == AssistUsage(prompt: counters.promptTokens, completion: counters.completionTokens, estimated: false))

            let sent = try #require(harness.emulator.recordedRequests.first)
            #expect(sent.stream == stream)
            #expect(sent.includeUsage == stream)
            #expect(sent.maxTokens == 200)
            #expect(sent.temperature == 0.2)
            #expect(sent.messages.map(\.role) == ["system", "user"])
            #expect(sent.messages.map(\.content) == Harness.messages.map(\.content))
        }
    }

    @Test func theKeyGoesOutAsABearerToken() async throws {
        try await Harness.run(emulator: { $0.apiKey = "sk-emulated" }) { harness in
            _ = try await harness.complete().get()
            #expect(harness.emulator.recordedRequests.map(\.authorization) == [.bearer])
        }
        try await Harness.run { harness in
            _ = try await harness.complete().get()
            #expect(harness.emulator.recordedRequests.map(\.authorization) == [.absent])
        }
    }

    @Test func a429IsRetriedOnlyOnceTheClockPassesItsRetryAfter() async throws {
        try await Harness.run { harness in
            harness.emulator.script([.status(429, retryAfter: 2)])
            let call = harness.start()
            try await harness.waitForSleeps([.seconds(2)], "the wait the 429 asked for")
            #expect(harness.emulator.recordedRequests.count == 1)

            harness.clock.advance(by: .milliseconds(1999))
            // Still waiting, a millisecond short: nothing was sent meanwhile.
            try await harness.waitForSleeps([.milliseconds(1)], "the rest of the wait")
            #expect(harness.emulator.recordedRequests.count == 1)

            harness.clock.advance(by: .milliseconds(1))
            let completion = try await call.value.get()
            #expect(completion.attempts == 2)
            #expect(harness.emulator.recordedRequests.map(\.status) == [429, 200])
        }
    }

    @Test func aRetryAfterLongerThanTheTimeLeftFailsAtOnce() async throws {
        try await Harness.run { harness in
            harness.emulator.script([.status(429, retryAfter: 60)])
            let failure = await harness.complete().failure
            #expect(failure == .rateLimited(retryAfter: .seconds(60)))
            #expect(harness.emulator.recordedRequests.count == 1)
            #expect(harness.clock.now.offset == .zero)
        }
    }

    @Test func a429ForASpentQuotaIsARefusal() async throws {
        try await Harness.run { harness in
            harness.emulator.script([.status(429, retryAfter: 1, code: "insufficient_quota")])
            #expect(await harness.complete().failure == .refused(status: 429, code: .insufficientQuota))
            #expect(harness.emulator.recordedRequests.count == 1)
        }
    }

    @Test func a500ThenSuccessTakesTwoAttempts() async throws {
        try await Harness.run { harness in
            harness.emulator.script([.status(500)])
            let call = harness.start()
            try await harness.waitForSleeps([.milliseconds(500)], "the first backoff")
            harness.clock.advance(by: .milliseconds(500))
            let completion = try await call.value.get()
            #expect(completion.attempts == 2)
            #expect(completion.text == "(test-model) How do I reset my password?")
        }
    }

    @Test func threeServiceUnavailablesEndInServer503() async throws {
        try await Harness.run { harness in
            harness.emulator.setPermanentOutcome(.status(503))
            let call = harness.start()
            try await harness.waitForSleeps([.milliseconds(500)], "the first backoff")
            harness.clock.advance(by: .milliseconds(500))
            try await harness.waitForSleeps([.seconds(1)], "the second backoff, twice as long")
            harness.clock.advance(by: .seconds(1))
            #expect(await call.value.failure == .server(status: 503))
            #expect(harness.emulator.recordedRequests.map(\.status) == [503, 503, 503])
        }
    }

    @Test func refusalsAreNotRetried() async throws {
        try await Harness.run { harness in
            harness.emulator.script([.status(400)])
            #expect(await harness.complete().failure == .refused(status: 400, code: .invalidRequest))
            #expect(harness.emulator.recordedRequests.count == 1)
        }
        try await Harness.run(emulator: { $0.apiKey = "sk-emulated" }, client: { $0.apiKey = "sk-wrong" }) { harness in
            #expect(await harness.complete().failure == .refused(status: 401, code: .invalidAPIKey))
            #expect(harness.emulator.recordedRequests.map(\.authorization) == [.wrongBearer])
        }
        try await Harness.run(client: { $0.model = "no-such-model" }) { harness in
            #expect(await harness.complete().failure == .refused(status: 404, code: .modelNotFound))
            #expect(harness.emulator.recordedRequests.count == 1)
        }
    }

    @Test func aProviderThatHangsPastTheDeadlineTimesOut() async throws {
        try await Harness.run { harness in
            harness.emulator.setPermanentOutcome(.hang)
            let call = harness.start()
            try await harness.emulator.waitUntil("the first request held") { $0.counters.held == 1 }
            try await harness.waitForSleeps([.seconds(20)], "the first attempt's timeout")
            harness.clock.advance(by: .seconds(20))
            try await harness.waitForSleeps([.milliseconds(500)], "the backoff after the attempt timed out")
            harness.clock.advance(by: .milliseconds(500))
            try await harness.emulator.waitUntil("the second request held") { $0.recordedRequests.count == 2 }
            // The second attempt gets what is left of the call's 30 s.
            try await harness.waitForSleeps([.milliseconds(9500)], "the second attempt's timeout")
            harness.clock.advance(by: .milliseconds(9500))
            #expect(await call.value.failure == .timeout)
            #expect(harness.emulator.recordedRequests.count == 2)
            harness.emulator.release()
        }
    }

    @Test func aCutStreamIsRetriedThenFailsAsCut() async throws {
        try await Harness.run { harness in
            harness.emulator.setPermanentOutcome(.cutStream(afterChunks: 2))
            let call = harness.start()
            try await harness.waitForSleeps([.milliseconds(500)], "the first backoff")
            harness.clock.advance(by: .milliseconds(500))
            try await harness.waitForSleeps([.seconds(1)], "the second backoff")
            harness.clock.advance(by: .seconds(1))
            #expect(await call.value.failure == .cutStream)
            #expect(harness.emulator.recordedRequests.count == 3)
        }
    }

    @Test func aBodyCutHalfWayIsRetried() async throws {
        try await Harness.run(client: { $0.stream = false }) { harness in
            harness.emulator.script([.cutStream(afterChunks: 0)])
            let call = harness.start()
            try await harness.waitForSleeps([.milliseconds(500)], "the backoff after the cut body")
            harness.clock.advance(by: .milliseconds(500))
            #expect(try await call.value.get().attempts == 2)
        }
    }

    @Test(arguments: [true, false])
    func malformedAndGarbageAreMalformedAndFinal(stream: Bool) async throws {
        try await Harness.run(client: { $0.stream = stream }) { harness in
            harness.emulator.script([.malformed, .garbage])
            for _ in 0..<2 {
                let failure = await harness.complete().failure
                guard case .malformed = failure else {
                    Issue.record("expected malformed, got \(String(describing: failure))")
                    return
                }
            }
            #expect(harness.emulator.recordedRequests.count == 2)
        }
    }

    @Test func missingUsageIsEstimated() async throws {
        let body = #"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Use the reset link."},"finish_reason":"stop"}]}"#
        try await Harness.run(client: { $0.stream = false }) { harness in
            harness.emulator.script([.raw(status: 200, contentType: "application/json", body: body)])
            let completion = try await harness.complete().get()
            #expect(completion.text == "Use the reset link.")
            #expect(
                completion.usage
                    == AssistUsage(
                        prompt: AssistUsage.estimatedTokens(in: Harness.messages), completion: AssistUsage.estimatedTokens(in: "Use the reset link."),
                        estimated: true))
            #expect(completion.usage.completion == 5)
        }
    }

    @Test func aPlainJSONAnswerToAStreamedRequestIsReadWhole() async throws {
        let body = #"{"choices":[{"message":{"content":"Whole, not streamed."},"finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":3}}"#
        try await Harness.run { harness in
            harness.emulator.script([.raw(status: 200, contentType: "application/json; charset=utf-8", body: body)])
            let completion = try await harness.complete().get()
            #expect(completion.text == "Whole, not streamed.")
            #expect(completion.finishReason == "length")
            #expect(completion.usage == AssistUsage(prompt: 7, completion: 3, estimated: false))
            #expect(harness.emulator.recordedRequests.first?.stream == true)
        }
    }

    @Test func aStreamWithoutUsageIsEstimatedAndKeepsItsPieces() async throws {
        let stream = [
            #"data: {"choices":[{"delta":{"role":"assistant"}}]}"#, "", ": keep-alive", "",
            #"data: {"choices":[{"delta":{"content":"Hel"}}]}"#, "", #"data: {"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
            "", "data: [DONE]", "",
        ].joined(separator: "\r\n")
        try await Harness.run { harness in
            harness.emulator.script([.raw(status: 200, contentType: "text/event-stream", body: stream)])
            let completion = try await harness.complete().get()
            #expect(completion.text == "Hello")
            #expect(completion.finishReason == "stop")
            #expect(completion.usage.estimated)
            #expect(completion.usage.completion == 2)
        }
    }

    @Test func ollamasPlainErrorIsReadAsARefusal() async throws {
        try await Harness.run { harness in
            harness.emulator.script([
                .raw(status: 404, contentType: "application/json", body: #"{"error":"model \"llama3\" not found, try pulling it first"}"#),
                .raw(status: 400, contentType: "application/json", body: #"{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}"#),
            ])
            #expect(await harness.complete().failure == .refused(status: 404, code: .status(404)))
            #expect(await harness.complete().failure == .refused(status: 400, code: .contextLengthExceeded))
            #expect(harness.emulator.recordedRequests.count == 2)
        }
    }

    @Test func anAnswerLargerThanTheBoundIsMalformed() async throws {
        let text = String(repeating: "a", count: 4096)
        let request = AssistRequest(messages: Harness.messages, maxTokens: 4096)
        try await Harness.run(client: { $0.maxAnswerBytes = 1024 }) { harness in
            harness.emulator.script([.answer(text)])
            #expect(await harness.complete(request).failure == .malformed("the streamed text is longer than 1024 bytes"))
        }
        try await Harness.run(client: {
            $0.maxAnswerBytes = 1024
            $0.stream = false
        }) { harness in
            harness.emulator.script([.answer(text)])
            #expect(await harness.complete(request).failure == .malformed("the answer is larger than 1024 bytes"))
        }
    }

    @Test func modelsListsWhatTheProviderServes() async throws {
        try await Harness.run(emulator: {
            $0.models = ["test-model", "other-model"]
            $0.apiKey = "sk-emulated"
        }) { harness in
            let models = try await harness.client.models()
            #expect(models.sorted() == ["other-model", "test-model"])
            #expect(harness.emulator.counters.modelListings == 1)
        }
        try await Harness.run(emulator: { $0.apiKey = "sk-emulated" }, client: { $0.apiKey = nil }) { harness in
            do throws(AssistFailure) {
                _ = try await harness.client.models()
                Issue.record("a missing key was accepted")
            } catch {
                #expect(error == .refused(status: 401, code: .invalidAPIKey))
            }
        }
    }

    @Test func anUnreachableProviderIsRetriedThenUnreachable() async throws {
        // A port nothing listens on: the emulator's, once it has stopped. The HTTP client fails a
        // refused connection at once instead of trying again until its connect timeout.
        let base = try await Harness.run { harness in await harness.emulator.endpoints().baseURL }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let clock = ManualClock()
        let client = AssistClient(
            configuration: .init(baseURL: base, model: "test-model"), httpClient: http, clock: clock, random: { 0.5 }, logger: Harness.logger)
        let call = Task { () async -> AssistFailure? in
            do throws(AssistFailure) {
                _ = try await client.complete(Harness.request)
                return nil
            } catch {
                return error
            }
        }
        do {
            try await clock.changes.wait(for: "the first backoff") { _ in clock.sleepsLeft == [.milliseconds(500)] }
            clock.advance(by: .milliseconds(500))
            try await clock.changes.wait(for: "the second backoff") { _ in clock.sleepsLeft == [.seconds(1)] }
            clock.advance(by: .seconds(1))
            let failure = await call.value
            guard case .unreachable = failure else {
                Issue.record("expected unreachable, got \(String(describing: failure))")
                try await http.shutdown()
                return
            }
        } catch {
            call.cancel()
            try await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }
}
