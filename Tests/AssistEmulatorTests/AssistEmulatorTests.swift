import AssistEmulator
import Foundation
import Testing

/// The provider's wire format: what a client of an OpenAI-compatible server relies on.
@Suite(.timeLimit(.minutes(2)))
struct AssistEmulatorTests {
    static let question: [(String, String)] = [("system", "Be brief."), ("user", "How do I reset my password?")]
    /// "(test-model) How do I reset my password?": 40 bytes, 10 tokens. The prompt: 9 bytes
    /// (3 tokens) and 27 bytes (7 tokens), each message 3 more.
    static let expectedUsage = Usage(prompt_tokens: 16, completion_tokens: 10, total_tokens: 26)

    @Test func aPlainAnswerFollowsTheRuleAndCountsTokens() async throws {
        try await Harness.withEmulator { emulator, http in
            let first = try await http.complete(ChatBody(Self.question))
            #expect(first.status == 200)
            #expect(first.header("content-type") == "application/json")
            let completion = try first.decoded(Completion.self)
            #expect(completion.object == "chat.completion")
            #expect(completion.model == "test-model")
            #expect(completion.choices.count == 1)
            #expect(completion.choices[0].index == 0)
            #expect(completion.choices[0].message.role == "assistant")
            #expect(completion.choices[0].message.content == "(test-model) How do I reset my password?")
            #expect(completion.choices[0].finish_reason == "stop")
            #expect(completion.usage == Self.expectedUsage)

            let second = try await http.complete(ChatBody(Self.question)).decoded(Completion.self)
            #expect(second.choices[0].message.content == completion.choices[0].message.content)
            #expect(second.usage == completion.usage)
            #expect(emulator.counters.completed == 2)
            #expect(emulator.counters.promptTokens == 32)
        }
    }

    @Test func theRuleAnswersTheLastUserMessageClippedTo200Characters() async throws {
        try await Harness.withEmulator { _, http in
            let long = String(repeating: "é", count: 300)
            let answer = try await http.complete(ChatBody([("user", "first"), ("assistant", "ok"), ("user", long)]))
            let content = try answer.decoded(Completion.self).choices[0].message.content
            #expect(content == "(test-model) " + String(repeating: "é", count: 200))
        }
    }

    @Test func aStreamSendsTheRoleThenPiecesThenTheFinishReasonThenDone() async throws {
        try await Harness.withEmulator({ $0.chunkCharacters = 8 }) { emulator, http in
            let answer = try await http.complete(ChatBody(Self.question, stream: true))
            #expect(answer.status == 200)
            #expect(answer.failure == nil)
            #expect(answer.header("content-type") == "text/event-stream")
            #expect(answer.events.last == "[DONE]")
            #expect(answer.events.filter { $0 == "[DONE]" }.count == 1)
            let chunks = try answer.chunks()
            #expect(chunks.allSatisfy { $0.object == "chat.completion.chunk" && $0.model == "test-model" })
            #expect(Set(chunks.map(\.id)).count == 1)
            #expect(chunks.first?.choices?.first?.delta.role == "assistant")
            let text = chunks.compactMap { $0.choices?.first?.delta.content }.joined()
            #expect(text == "(test-model) How do I reset my password?")
            // 40 characters in pieces of 8, the role's chunk and the finish's.
            #expect(chunks.count == 7)
            #expect(chunks.dropLast().allSatisfy { $0.choices?.first?.finish_reason == nil })
            #expect(chunks.last?.choices?.first?.finish_reason == "stop")
            #expect(chunks.allSatisfy { $0.usage == nil })
            #expect(emulator.counters.streamed == 1)
        }
    }

    @Test func includeUsageAddsAChunkWithoutChoicesBeforeDone() async throws {
        try await Harness.withEmulator { _, http in
            let answer = try await http.complete(ChatBody(Self.question, stream: true, includeUsage: true))
            let chunks = try answer.chunks()
            let last = try #require(chunks.last)
            #expect(last.choices?.isEmpty == true)
            #expect(last.usage == Self.expectedUsage)
            #expect(chunks.dropLast().last?.choices?.first?.finish_reason == "stop")
            #expect(answer.events.last == "[DONE]")
        }
    }

    @Test func maxTokensCutsTheReplyWithFinishReasonLength() async throws {
        try await Harness.withEmulator { emulator, http in
            let plain = try await http.complete(ChatBody(Self.question, maxTokens: 3)).decoded(Completion.self)
            #expect(plain.choices[0].message.content == "(test-model)")
            #expect(plain.choices[0].finish_reason == "length")
            #expect(plain.usage.completion_tokens == 3)

            let streamed = try await http.complete(ChatBody(Self.question, maxTokens: 3, stream: true)).chunks()
            #expect(streamed.compactMap { $0.choices?.first?.delta.content }.joined() == "(test-model)")
            #expect(streamed.last?.choices?.first?.finish_reason == "length")

            // Never inside a character: "é" is two bytes, so one token (4 bytes) holds "aé".
            emulator.script([.answer("aéé")])
            let accents = try await http.complete(ChatBody(Self.question, maxTokens: 1)).decoded(Completion.self)
            #expect(accents.choices[0].message.content == "aé")
            let enough = try await http.complete(ChatBody(Self.question, maxTokens: 10)).decoded(Completion.self)
            #expect(enough.choices[0].finish_reason == "stop")
        }
    }

    @Test func modelsAreListed() async throws {
        try await Harness.withEmulator({ $0.models = ["small", "large"] }) { _, http in
            let answer = try await http.send(.GET, http.endpoints.baseURL + "/models")
            #expect(answer.status == 200)
            let list = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
            #expect(list["object"] as? String == "list")
            let data = try #require(list["data"] as? [[String: Any]])
            #expect(data.map { $0["id"] as? String } == ["small", "large"])
            #expect(data.allSatisfy { $0["object"] as? String == "model" && $0["owned_by"] is String })
            #expect(http.endpoints.model == "small")
            let one = try await http.send(.GET, http.endpoints.baseURL + "/models/large")
            #expect(one.status == 200)
            let missing = try await http.send(.GET, http.endpoints.baseURL + "/models/medium")
            #expect(missing.status == 404)
            #expect(try missing.decoded(ErrorBody.self).error.code == "model_not_found")
        }
    }

    // MARK: Refusals

    @Test func aConfiguredKeyIsRequiredAsABearerAndNeverRecorded() async throws {
        let key = "sk-emulator-secret-1234"
        try await Harness.withEmulator({ $0.apiKey = key }) { emulator, http in
            #expect(http.endpoints.apiKey == key)
            let missing = try await http.complete(ChatBody(Self.question))
            let wrong = try await http.complete(ChatBody(Self.question), key: "sk-other")
            for refused in [missing, wrong] {
                #expect(refused.status == 401)
                let error = try refused.decoded(ErrorBody.self).error
                #expect(error.code == "invalid_api_key")
                #expect(error.type == "invalid_request_error")
                #expect(!error.message.isEmpty)
            }
            let listing = try await http.send(.GET, http.endpoints.baseURL + "/models")
            #expect(listing.status == 401)
            let accepted = try await http.complete(ChatBody(Self.question), key: key)
            #expect(accepted.status == 200)
            #expect(try await http.send(.GET, http.endpoints.baseURL + "/models", key: key).status == 200)

            #expect(emulator.recordedRequests.map(\.authorization) == [.absent, .wrongBearer, .bearer])
            #expect(emulator.recordedRequests.map(\.status) == [401, 401, 200])
            #expect(emulator.counters.refused == ["401": 2])
            let recorded = try await http.control(.GET, "/requests")
            #expect(recorded.status == 200)
            #expect(!recorded.text.contains(key))
            #expect(!recorded.text.contains("sk-other"))
        }
    }

    @Test func anUnknownModelIs404ModelNotFound() async throws {
        try await Harness.withEmulator { emulator, http in
            let answer = try await http.complete(ChatBody(Self.question, model: "gpt-nonexistent"))
            #expect(answer.status == 404)
            let error = try answer.decoded(ErrorBody.self).error
            #expect(error.code == "model_not_found")
            #expect(error.param == "model")
            #expect(error.message.contains("gpt-nonexistent"))
            #expect(emulator.recordedRequests.first?.model == "gpt-nonexistent")
            #expect(emulator.recordedRequests.first?.outcome == "refused")
        }
    }

    @Test(arguments: [
        ("not json", "{\"model\": ", nil as String?),
        ("no model", #"{"messages": [{"role": "user", "content": "hi"}]}"#, "model"),
        ("no messages", #"{"model": "test-model", "messages": []}"#, "messages"),
        ("a bad role", #"{"model": "test-model", "messages": [{"role": "wizard", "content": "hi"}]}"#, "messages[0].role"),
        ("a missing content", #"{"model": "test-model", "messages": [{"role": "user"}]}"#, "messages[0].content"),
        ("a wrong type", #"{"model": "test-model", "stream": "yes", "messages": [{"role": "user", "content": "hi"}]}"#, "stream"),
        ("max_tokens 0", #"{"model": "test-model", "max_tokens": 0, "messages": [{"role": "user", "content": "hi"}]}"#, "max_tokens"),
        ("a hot temperature", #"{"model": "test-model", "temperature": 9, "messages": [{"role": "user", "content": "hi"}]}"#, "temperature"),
    ])
    func anInvalidBodyIs400InTheProvidersShape(_ name: String, _ body: String, _ param: String?) async throws {
        try await Harness.withEmulator { emulator, http in
            let answer = try await http.complete(body: body)
            #expect(answer.status == 400, "\(name)")
            let object = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
            let error = try #require(object["error"] as? [String: Any])
            #expect(Set(error.keys) == ["message", "type", "param", "code"], "\(name)")
            #expect(error["type"] as? String == "invalid_request_error")
            #expect((error["message"] as? String)?.isEmpty == false)
            #expect(error["param"] as? String == param, "\(name)")
            #expect(emulator.counters.refused == ["400": 1])
            #expect(emulator.counters.completed == 0)
        }
    }

    @Test func contentAsTextPartsIsRead() async throws {
        try await Harness.withEmulator { emulator, http in
            let body = #"{"model": "test-model", "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}"#
            let answer = try await http.complete(body: body)
            #expect(try answer.decoded(Completion.self).choices[0].message.content == "(test-model) ab")
            #expect(emulator.recordedRequests.first?.messages.first?.content == "ab")
        }
    }

    @Test func aBodyOverTheLimitIsRefusedWith413() async throws {
        try await Harness.withEmulator({ $0.maxRequestBytes = 1_000 }) { emulator, http in
            let answer = try await http.complete(ChatBody([("user", String(repeating: "x", count: 5_000))]))
            #expect(answer.status == 413)
            #expect(try answer.decoded(ErrorBody.self).error.code == "request_too_large")
            #expect(emulator.recordedRequests.first?.messages.isEmpty == true)
            // The emulator still answers afterwards.
            #expect(try await http.complete(ChatBody(Self.question)).status == 200)
        }
    }
}
