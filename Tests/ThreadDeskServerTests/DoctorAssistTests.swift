import AssistEmulator
import Testing
@testable import ThreadDeskServer

/// The doctor asks the assistant's provider for its models: the URL answers, the key is
/// accepted, the model is served; each failure named with what to set.
@Suite("Doctor: the assistant's provider")
struct DoctorAssistTests {
    func report(model: String, key: String?, serverKey: String? = "sk-right-key") async throws -> DoctorCheck? {
        var emulatorConfiguration = AssistEmulator.Configuration()
        emulatorConfiguration.apiKey = serverKey
        return try await AssistEmulator.withRunning(configuration: emulatorConfiguration, logger: testLogger()) { assist in
            let endpoints = await assist.endpoints()
            var configuration = ServerConfiguration(discordToken: "t", guildID: "1", forumChannelID: "2", appKey: "a-test-app-key-of-24-chars")
            configuration.assist.url = endpoints.baseURL
            configuration.assist.model = model
            configuration.assist.apiKey = key
            let checks = await Doctor(configuration: configuration, logger: testLogger()).assistChecks()
            #expect(checks.count == 1)
            return checks.first
        }
    }

    @Test func aProviderThatServesTheModelPasses() async throws {
        let check = try #require(try await report(model: "test-model", key: "sk-right-key"))
        #expect(check.passed && check.name == "assist.provider" && check.detail.contains("serves test-model"))
        #expect(!check.line.contains("sk-right-key"))
    }

    @Test func aWrongKeyOrModelIsNamed() async throws {
        let key = try #require(try await report(model: "test-model", key: "sk-wrong-key"))
        #expect(!key.passed && key.detail.contains("refused the key") && key.fix?.contains("ASSIST_API_KEY_FILE") == true)
        #expect(!key.line.contains("sk-wrong-key"))
        let model = try #require(try await report(model: "gpt-nonexistent", key: "sk-right-key"))
        #expect(!model.passed && model.detail.contains("does not list the model gpt-nonexistent") && model.fix?.contains("ASSIST_MODEL") == true)
    }

    @Test func offIsSaid() async {
        let configuration = ServerConfiguration(discordToken: "t", guildID: "1", forumChannelID: "2", appKey: "a-test-app-key-of-24-chars")
        let checks = await Doctor(configuration: configuration, logger: testLogger()).assistChecks()
        #expect(checks.map(\.name) == ["assist"] && checks.allSatisfy(\.passed))
    }
}
