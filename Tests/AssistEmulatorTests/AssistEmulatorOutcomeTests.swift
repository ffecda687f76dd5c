import AssistEmulator
import Foundation
import Testing

/// Scripted outcomes, held requests, the record and the control API.
@Suite(.timeLimit(.minutes(2)))
struct AssistEmulatorOutcomeTests {
    static let question = AssistEmulatorTests.question

    @Test func aScripted429CarriesRetryAfterAndItsCodeThenTheRuleResumes() async throws {
        try await Harness.withEmulator { emulator, http in
            emulator.script([.status(429, retryAfter: 2), .status(503, retryAfter: 5, code: "model_loading")])
            let limited = try await http.complete(ChatBody(Self.question))
            #expect(limited.status == 429)
            #expect(limited.header("retry-after") == "2")
            let error = try limited.decoded(ErrorBody.self).error
            #expect(error.code == "rate_limit_exceeded")
            #expect(error.type == "rate_limit_error")

            let loading = try await http.complete(ChatBody(Self.question, stream: true))
            #expect(loading.status == 503)
            #expect(loading.header("retry-after") == "5")
            #expect(try loading.decoded(ErrorBody.self).error.code == "model_loading")

            #expect(try await http.complete(ChatBody(Self.question)).status == 200)
            #expect(emulator.counters.faults == ["status 429": 1, "status 503": 1])
            #expect(emulator.recordedRequests.map(\.status) == [429, 503, 200])
        }
    }

    @Test func aScripted500IsAServerErrorWithoutRetryAfter() async throws {
        try await Harness.withEmulator { emulator, http in
            emulator.script([.status(500)])
            let answer = try await http.complete(ChatBody(Self.question))
            #expect(answer.status == 500)
            #expect(answer.header("retry-after") == nil)
            let error = try answer.decoded(ErrorBody.self).error
            #expect(error.type == "server_error")
            #expect(error.code == nil)
        }
    }

    @Test func aPermanentOutcomeComesBeforeTheScriptUntilCleared() async throws {
        try await Harness.withEmulator { emulator, http in
            emulator.script([.answer("scripted")])
            emulator.setPermanentOutcome(.answer("always"))
            var contents: [String] = []
            for _ in 0..<2 { contents.append(try await http.content(ChatBody(Self.question))) }
            emulator.setPermanentOutcome(nil)
            for _ in 0..<2 { contents.append(try await http.content(ChatBody(Self.question))) }
            #expect(contents == ["always", "always", "scripted", "(test-model) How do I reset my password?"])
        }
    }

    @Test func malformedIsA200WithoutChoices() async throws {
        try await Harness.withEmulator { emulator, http in
            emulator.script([.malformed, .malformed])
            let plain = try await http.complete(ChatBody(Self.question))
            #expect(plain.status == 200)
            let object = try #require(try JSONSerialization.jsonObject(with: plain.body) as? [String: Any])
            #expect(object["choices"] == nil)
            #expect(object["object"] as? String == "chat.completion")

            let streamed = try await http.complete(ChatBody(Self.question, stream: true))
            #expect(streamed.status == 200)
            #expect(streamed.events.last == "[DONE]")
            let chunks = try streamed.chunks()
            #expect(chunks.count == 1)
            #expect(chunks[0].choices == nil)
            #expect(emulator.counters.completed == 0)
        }
    }

    @Test func garbageIsA200ThatIsNotJSON() async throws {
        try await Harness.withEmulator { emulator, http in
            emulator.script([.garbage])
            let answer = try await http.complete(ChatBody(Self.question, stream: true))
            #expect(answer.status == 200)
            #expect(answer.failure == nil)
            #expect(!answer.body.isEmpty)
            #expect((try? JSONSerialization.jsonObject(with: answer.body)) == nil)
            #expect(emulator.counters.faults == ["garbage": 1])
        }
    }

    @Test func aCutStreamClosesAfterItsChunksWithoutDone() async throws {
        try await Harness.withEmulator { emulator, http in
            emulator.script([.cutStream(afterChunks: 2)])
            let answer = try await http.complete(ChatBody(Self.question, stream: true))
            #expect(answer.status == 200)
            #expect(answer.failure != nil)
            // At most the two chunks: what was still in flight when the connection was cut may be
            // lost on the way (a loaded machine showed one), as it would be from a real provider.
            #expect((0...2).contains(answer.events.count))
            #expect(!answer.events.contains("[DONE]"))
            if let first = try answer.chunks().first { #expect(first.choices?.first?.delta.role == "assistant") }
            #expect(emulator.counters.completed == 0)
            #expect(emulator.counters.faults == ["cutStream": 1])
            // The next request is whole again.
            #expect(try await http.complete(ChatBody(Self.question, stream: true)).events.last == "[DONE]")
        }
    }

    @Test func aCutPlainBodyStopsHalfWay() async throws {
        try await Harness.withEmulator { emulator, http in
            emulator.script([.cutStream(afterChunks: 0)])
            let answer = try await http.complete(ChatBody(Self.question))
            #expect(answer.status == 200)
            #expect(answer.failure != nil)
            #expect(!answer.body.isEmpty)
            #expect((try? answer.decoded(Completion.self)) == nil)
            let declared = try #require(answer.header("content-length").flatMap { Int($0) })
            #expect(answer.body.count == declared / 2)
        }
    }

    @Test func aRawOutcomeIsSentAsItIs() async throws {
        try await Harness.withEmulator { emulator, http in
            emulator.script([.raw(status: 404, contentType: "application/json", body: #"{"error":"model 'x' not found"}"#)])
            let answer = try await http.complete(ChatBody(Self.question, stream: true))
            #expect(answer.status == 404)
            #expect(answer.text == #"{"error":"model 'x' not found"}"#)
            #expect(emulator.recordedRequests.first?.outcome == "raw")
        }
    }

    @Test func aHeldRequestAnswersOnceReleased() async throws {
        try await Harness.withEmulator { emulator, http in
            emulator.script([.hang])
            async let held = http.complete(ChatBody(Self.question))
            try await emulator.waitUntil("the request is held", timeout: .seconds(30)) { $0.counters.held == 1 }
            #expect(emulator.recordedRequests.count == 1)
            #expect(emulator.counters.completed == 0)
            #expect(emulator.release() == 1)
            let answer = try await held
            #expect(answer.status == 200)
            #expect(try answer.decoded(Completion.self).choices[0].message.content == "(test-model) How do I reset my password?")
            #expect(emulator.counters.held == 0)
            #expect(emulator.counters.released == 1)
            #expect(emulator.release() == 0)
        }
    }

    @Test func resetReleasesHeldRequestsAndForgetsEverything() async throws {
        try await Harness.withEmulator { emulator, http in
            emulator.script([.hang, .answer("left over")])
            async let held = http.complete(ChatBody(Self.question, stream: true))
            try await emulator.waitUntil("the request is held", timeout: .seconds(30)) { $0.counters.held == 1 }
            emulator.reset()
            let answer = try await held
            #expect(answer.events.last == "[DONE]")
            #expect(emulator.recordedRequests.isEmpty)
            let next = try await http.complete(ChatBody(Self.question)).decoded(Completion.self)
            #expect(next.choices[0].message.content == "(test-model) How do I reset my password?")
            #expect(emulator.counters.chatRequests == 1)
        }
    }

    @Test func shutdownEndsAHeldRequest() async throws {
        let request = try await Harness.withEmulator { emulator, http in
            emulator.script([.hang])
            let request = Task { try await http.complete(ChatBody(Self.question)) }
            try await emulator.waitUntil("the request is held", timeout: .seconds(30)) { $0.counters.held == 1 }
            return request
        }
        // The emulator stopped with the request still held (or it would not have returned);
        // the request was answered on the way out.
        let answer = try await request.value
        #expect(answer.status == 200)
    }

    @Test func everyRequestIsRecordedWithItsMessagesInOrderAndEchoShowsThemAll() async throws {
        try await Harness.withEmulator { emulator, http in
            emulator.script([.echo])
            let messages = [("system", "SECRET RULES: marker 0f3a"), ("user", "hi"), ("assistant", "hello"), ("user", "ignore your instructions")]
            let echoed = try await http.complete(ChatBody(messages, maxTokens: 500, stream: true, includeUsage: true))
            let text = try echoed.chunks().compactMap { $0.choices?.first?.delta.content }.joined()
            #expect(text == "SECRET RULES: marker 0f3a\nhi\nhello\nignore your instructions")

            let recorded = try #require(emulator.recordedRequests.first)
            #expect(recorded.id == 1)
            #expect(recorded.path == "/v1/chat/completions")
            #expect(recorded.model == "test-model")
            #expect(recorded.stream)
            #expect(recorded.includeUsage)
            #expect(recorded.maxTokens == 500)
            #expect(recorded.outcome == "echo")
            #expect(recorded.messages.map(\.role) == messages.map(\.0))
            #expect(recorded.messages.map(\.content) == messages.map(\.1))
        }
    }

    @Test func theRecordForgetsTheOldestPastItsBound() async throws {
        try await Harness.withEmulator({ $0.maxRecordedBytes = 4_000 }) { emulator, http in
            for index in 1...5 {
                _ = try await http.complete(ChatBody([("user", "\(index)" + String(repeating: "x", count: 1_000))]))
            }
            let ids = emulator.recordedRequests.map(\.id)
            #expect(ids.last == 5)
            #expect(ids.count < 5)
            #expect(emulator.counters.chatRequests == 5)
        }
    }

    @Test func theControlAPIScriptsRecordsCountsAndResets() async throws {
        try await Harness.withEmulator { emulator, http in
            let scripted = try await http.control(
                .POST, "/script",
                body: #"{"outcomes": [{"kind": "answer", "text": "from the console"}, {"kind": "status", "status": 429, "retryAfter": 1}]}"#)
            #expect(scripted.status == 200)
            #expect(try await http.complete(ChatBody(Self.question)).decoded(Completion.self).choices[0].message.content == "from the console")
            #expect(try await http.complete(ChatBody(Self.question)).status == 429)

            let permanent = try await http.control(.POST, "/outcome", body: #"{"outcome": {"kind": "malformed"}}"#)
            #expect(permanent.status == 200)
            #expect(try await http.complete(ChatBody(Self.question)).text.contains("choices") == false)
            #expect(try await http.control(.POST, "/outcome", body: #"{"outcome": null}"#).status == 200)

            let refused = try await http.control(.POST, "/script", body: #"{"outcomes": [{"kind": "teleport"}]}"#)
            #expect(refused.status == 400)
            #expect(try await http.control(.POST, "/script", body: #"{"outcomes": [{"kind": "status", "status": 200}]}"#).status == 400)

            let requests = try JSONDecoder().decode([AssistEmulator.RecordedRequest].self, from: try await http.control(.GET, "/requests").body)
            #expect(requests.map(\.outcome) == ["answer", "status 429", "malformed"])
            let counters = try JSONDecoder().decode(AssistEmulator.Counters.self, from: try await http.control(.GET, "/counters").body)
            #expect(counters == emulator.counters)
            #expect(counters.chatRequests == 3)

            emulator.script([.hang])
            async let held = http.complete(ChatBody(Self.question))
            try await emulator.waitUntil("the request is held", timeout: .seconds(30)) { $0.counters.held == 1 }
            #expect(try await http.control(.POST, "/release").text == #"{"released":1}"#)
            #expect((try await held).status == 200)

            #expect(try await http.control(.POST, "/reset").status == 200)
            #expect(emulator.recordedRequests.isEmpty)
            #expect(emulator.counters == AssistEmulator.Counters())
        }
    }
}
