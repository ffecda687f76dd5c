import Foundation
import Testing
import ThreadDeskCore
import ThreadDeskServer

/// The assistant's settings: off by default, `ASSIST_*` read and checked with every problem
/// named, each app's `assist` object over them field by field, and the provider's key never shown.
@Suite("Assistant configuration")
struct AssistConfigurationTests {
    static let complete = ConfigurationTests.complete

    /// A folder of its own with a key file in it, removed after `body`.
    static func withFolder<T>(_ body: (URL) throws -> T) throws -> T {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("assist-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "sk-deployment-secret-0123456789\n".write(to: folder.appendingPathComponent("assist.key"), atomically: true, encoding: .utf8)
        try "sk-beta-own-secret-9876543210".write(to: folder.appendingPathComponent("beta.key"), atomically: true, encoding: .utf8)
        return try body(folder)
    }

    @Test func offUntilAProviderIsNamedAndTheDefaultsWhenItIs() throws {
        let off = try ServerConfiguration(environment: Self.complete)
        #expect(off.assist.url == nil && off.catalog.apps.allSatisfy { off.assist.effective(for: $0) == nil })
        // Away answers without a provider mean nothing: the assistant stays off, as drafts do.
        let awayAlone = try ServerConfiguration(environment: Self.complete.merging(["ASSIST_AUTO": "away"]) { $1 })
        #expect(awayAlone.assist.auto == .away && awayAlone.catalog.apps.allSatisfy { awayAlone.assist.effective(for: $0) == nil })
        try Self.withFolder { folder in
            let on = try ServerConfiguration(environment: Self.complete.merging([
                "ASSIST_URL": "http://127.0.0.1:11434/v1/", "ASSIST_MODEL": "llama3.1:8b", "ASSIST_API_KEY_FILE": folder.appendingPathComponent("assist.key").path,
            ]) { $1 })
            let app = try #require(on.catalog.apps.first)
            let effective = try #require(on.assist.effective(for: app))
            #expect(effective.provider == AssistProvider(url: "http://127.0.0.1:11434/v1", model: "llama3.1:8b", apiKey: "sk-deployment-secret-0123456789"))
            #expect(effective.tokensPerDay == 200_000 && effective.tokensPerUserPerDay == 20_000 && effective.drafts && effective.auto == .off)
            #expect(effective.autoMinimumMatch == 0.6 && effective.name == "Assistant")
            #expect(on.assist.timeout == .seconds(30) && on.assist.maxTokens == 500 && on.assist.draftDelay == .seconds(10))
            #expect(on.assist.maxDraftCharacters == 1500 && on.assist.autoMinimumMatch == 0.6 && on.assist.name == "Assistant")
            for shown in [String(describing: on), String(reflecting: on), String(reflecting: on.assist), String(reflecting: effective)] {
                #expect(!shown.contains("sk-deployment-secret"), "the key is never printed")
            }
            var dumped = ""
            dump(on, to: &dumped)
            #expect(!dumped.contains("sk-deployment-secret") && dumped.contains("<redacted>"))
        }
    }

    @Test func everyVariableIsCheckedAndEachProblemNamed() throws {
        let set = try ServerConfiguration(environment: Self.complete.merging([
            "ASSIST_URL": "https://api.example.com/v1", "ASSIST_MODEL": "gpt-x", "ASSIST_TOKENS_PER_DAY": "0", "ASSIST_TOKENS_PER_USER_PER_DAY": "500",
            "ASSIST_TIMEOUT_SECONDS": "12", "ASSIST_MAX_TOKENS": "300", "ASSIST_DRAFTS": "off", "ASSIST_DRAFT_DELAY_SECONDS": "0",
            "ASSIST_MAX_DRAFT_CHARS": "900", "ASSIST_AUTO": "Away", "ASSIST_AUTO_MIN_MATCH": "0.75", "ASSIST_NAME": " Help Desk Bot ",
        ]) { $1 })
        #expect(set.assist.tokensPerDay == 0 && set.assist.tokensPerUserPerDay == 500 && set.assist.timeout == .seconds(12))
        #expect(set.assist.maxTokens == 300 && !set.assist.drafts && set.assist.draftDelay == .zero && set.assist.maxDraftCharacters == 900)
        #expect(set.assist.effective(for: set.catalog.apps[0])?.provider.apiKey == nil)
        #expect(set.assist.auto == .away && set.assist.autoMinimumMatch == 0.75 && set.assist.name == "Help Desk Bot")
        let app = try #require(set.assist.effective(for: set.catalog.apps[0]))
        #expect(app.auto == .away && app.autoMinimumMatch == 0.75 && app.name == "Help Desk Bot")

        let bad = [
            "ASSIST_URL": "ftp://example.com", "ASSIST_MODEL": "two words", "ASSIST_API_KEY_FILE": "/nonexistent/assist.key",
            "ASSIST_TOKENS_PER_DAY": "-1", "ASSIST_TOKENS_PER_USER_PER_DAY": "lots", "ASSIST_TIMEOUT_SECONDS": "0", "ASSIST_MAX_TOKENS": "9",
            "ASSIST_DRAFTS": "maybe", "ASSIST_DRAFT_DELAY_SECONDS": "1.5", "ASSIST_MAX_DRAFT_CHARS": "5000",
            "ASSIST_AUTO": "sometimes", "ASSIST_AUTO_MIN_MATCH": "1.5", "ASSIST_NAME": "Discord Helper",
        ]
        #expect {
            try ServerConfiguration(environment: Self.complete.merging(bad) { $1 })
        } throws: { error in
            let said = (error as? ConfigurationProblem)?.invalid ?? []
            return bad.keys.allSatisfy { name in said.contains { $0.hasPrefix("\(name) (") } }
        }
        #expect {
            try ServerConfiguration(environment: Self.complete.merging(["ASSIST_URL": "http://127.0.0.1:8080/v1"]) { $1 })
        } throws: { error in
            (error as? ConfigurationProblem)?.invalid == ["ASSIST_MODEL (required with ASSIST_URL)"]
        }
    }

    /// The away answers' settings at their edges: the bounds of the share, and the names
    /// Discord refuses for a webhook's username.
    @Test func theAwayAnswersSettingsAtTheirEdges() throws {
        let provider = ["ASSIST_URL": "https://api.example.com/v1", "ASSIST_MODEL": "gpt-x"]
        func configuration(_ name: String, _ text: String) throws -> AssistSettings {
            try ServerConfiguration(environment: Self.complete.merging(provider) { $1 }.merging([name: text]) { $1 }).assist
        }
        #expect(try configuration("ASSIST_AUTO", "off").auto == .off)
        #expect(try configuration("ASSIST_AUTO_MIN_MATCH", "0").autoMinimumMatch == 0)
        #expect(try configuration("ASSIST_AUTO_MIN_MATCH", "1").autoMinimumMatch == 1)
        let longest = String(repeating: "é", count: 80)
        #expect(try configuration("ASSIST_NAME", longest).name == longest)
        #expect(try configuration("ASSIST_NAME", "Everyone's helper").name == "Everyone's helper")
        let refused = [
            ("ASSIST_AUTO", "on"), ("ASSIST_AUTO", "always"), ("ASSIST_AUTO_MIN_MATCH", "-0.1"), ("ASSIST_AUTO_MIN_MATCH", "1.01"),
            ("ASSIST_AUTO_MIN_MATCH", "nan"), ("ASSIST_AUTO_MIN_MATCH", "inf"), ("ASSIST_AUTO_MIN_MATCH", "60%"),
            ("ASSIST_NAME", String(repeating: "a", count: 81)), ("ASSIST_NAME", "clyde"), ("ASSIST_NAME", "Ask CLYDE"),
            ("ASSIST_NAME", "discord support"), ("ASSIST_NAME", "DiScOrD"), ("ASSIST_NAME", "everyone"), ("ASSIST_NAME", "Here"),
        ]
        for (name, text) in refused {
            #expect {
                try configuration(name, text)
            } throws: { error in
                let said = (error as? ConfigurationProblem)?.invalid ?? []
                return said.count == 1 && said[0].hasPrefix("\(name) (")
            }
        }
    }

    /// Each app's `assist` overrides the deployment's field by field; an app naming its own
    /// provider never gets the deployment's key; `"enabled": false` turns it off.
    @Test func eachAppOverridesTheDeploymentFieldByField() throws {
        try Self.withFolder { folder in
            let file = folder.appendingPathComponent("apps.json")
            try #"""
                {"apps": [
                  {"id": "alpha", "appKey": "alpha-key-0123456789abcdef", "forumChannelID": "201"},
                  {"id": "beta", "appKey": "beta-key-0123456789abcdef", "forumChannelID": "202",
                   "assist": {"url": "http://127.0.0.1:9999/v1", "model": "local", "apiKeyFile": "beta.key", "tokensPerDay": 5000,
                              "drafts": false}},
                  {"id": "gamma", "appKey": "gamma-key-0123456789abcdef", "forumChannelID": "203", "assist": {"url": "http://127.0.0.1:9998/v1"}},
                  {"id": "delta", "appKey": "delta-key-0123456789abcdef", "forumChannelID": "204", "assist": {"enabled": false}},
                  {"id": "eps", "appKey": "eps-key-0123456789abcdef", "forumChannelID": "205", "assist": {"tokensPerUserPerDay": 7}},
                  {"id": "zeta", "appKey": "zeta-key-0123456789abcdef", "forumChannelID": "206",
                   "assist": {"auto": "away", "autoMinimumMatch": 0.8, "name": "Zeta Helper"}},
                  {"id": "eta", "appKey": "eta-key-0123456789abcdef", "forumChannelID": "207", "assist": {"autoMinimumMatch": 1, "name": "Eta"}}
                ]}
                """#.write(to: file, atomically: true, encoding: .utf8)
            let configuration = try ServerConfiguration(environment: [
                "DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "9", "APPS_FILE": file.path, "ASSIST_URL": "https://api.example.com/v1",
                "ASSIST_MODEL": "shared-model", "ASSIST_API_KEY_FILE": folder.appendingPathComponent("assist.key").path,
                "ASSIST_AUTO_MIN_MATCH": "0.7",
            ])
            let apps = Dictionary(uniqueKeysWithValues: configuration.catalog.apps.map { ($0.id.rawValue, $0) })
            func effective(_ id: String) -> AssistAppSettings? { apps[id].flatMap(configuration.assist.effective(for:)) }
            #expect(effective("alpha")?.provider == AssistProvider(url: "https://api.example.com/v1", model: "shared-model", apiKey: "sk-deployment-secret-0123456789"))
            let beta = try #require(effective("beta"))
            #expect(beta.provider == AssistProvider(url: "http://127.0.0.1:9999/v1", model: "local", apiKey: "sk-beta-own-secret-9876543210"))
            #expect(beta.tokensPerDay == 5000 && beta.tokensPerUserPerDay == 20_000 && beta.auto == .off && !beta.drafts)
            #expect(effective("gamma")?.provider == AssistProvider(url: "http://127.0.0.1:9998/v1", model: "shared-model", apiKey: nil), "another provider never gets the deployment's key")
            #expect(effective("delta") == nil)
            #expect(effective("eps")?.tokensPerUserPerDay == 7 && effective("eps")?.tokensPerDay == 200_000)
            let alpha = try #require(effective("alpha"))
            #expect(alpha.auto == .off && alpha.autoMinimumMatch == 0.7 && alpha.name == "Assistant")
            let zeta = try #require(effective("zeta"))
            #expect(zeta.auto == .away && zeta.autoMinimumMatch == 0.8 && zeta.name == "Zeta Helper" && zeta.drafts)
            let eta = try #require(effective("eta"))
            #expect(eta.auto == .off && eta.autoMinimumMatch == 1 && eta.name == "Eta")
            #expect(!String(reflecting: apps["beta"]!).contains("sk-beta-own"))
        }
    }

    /// The apps file the README points at is one the server takes as it is, keys beside it.
    @Test func theExampleAppsFileIsValid() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("deploy/apps.example.json")
        try Self.withFolder { folder in
            let keys = folder.appendingPathComponent("keys")
            try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
            try "weather-app-key-0123456789abcdef".write(to: keys.appendingPathComponent("weather.key"), atomically: true, encoding: .utf8)
            try "tides-app-key-0123456789abcdef".write(to: keys.appendingPathComponent("tides.key"), atomically: true, encoding: .utf8)
            let file = folder.appendingPathComponent("apps.json")
            try FileManager.default.copyItem(at: example, to: file)
            let configuration = try ServerConfiguration(environment: [
                "DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "1200000000000000001", "APPS_FILE": file.path,
                "ASSIST_URL": "https://api.example.com/v1", "ASSIST_MODEL": "shared-model",
            ])
            let apps = Dictionary(uniqueKeysWithValues: configuration.catalog.apps.map { ($0.id.rawValue, $0) })
            #expect(apps.keys.sorted() == ["default", "tides"])
            let tides = try #require(apps["tides"].flatMap(configuration.assist.effective(for:)))
            #expect(tides.provider.url == "http://127.0.0.1:11434/v1" && tides.auto == .away && tides.name == "Tides Helper" && tides.tokensPerDay == 100_000)
            #expect(apps["default"].flatMap(configuration.assist.effective(for:))?.provider.url == "https://api.example.com/v1")
        }
    }

    @Test func aBadAssistObjectIsNamedWithItsApp() throws {
        let bad = #"""
            {"apps": [
              {"id": "alpha", "appKey": "alpha-key-0123456789abcdef", "forumChannelID": "201",
               "assist": {"modle": "x", "url": "not a url", "apiKeyFile": "missing.key", "tokensPerDay": 1.5, "drafts": 1, "auto": "always",
                          "autoMinimumMatch": 1.5, "name": "Clyde"}},
              {"id": "beta", "appKey": "beta-key-0123456789abcdef", "forumChannelID": "202", "assist": "on"},
              {"id": "gamma", "appKey": "gamma-key-0123456789abcdef", "forumChannelID": "203",
               "assist": {"auto": true, "autoMinimumMatch": true, "name": ""}}
            ]}
            """#
        #expect {
            try AppsFile.parse(Data(bad.utf8), guildID: "100", relativeTo: URL(fileURLWithPath: NSTemporaryDirectory()))
        } throws: { error in
            let said = (error as? ConfigurationProblem)?.invalid ?? []
            let expected = [
                #"APPS_FILE apps[0] ("alpha"): unknown field "assist.modle""#, #"APPS_FILE apps[0] ("alpha"): assist.url (an http or https URL)"#,
                #"APPS_FILE apps[0] ("alpha"): assist.apiKeyFile ("#, #"APPS_FILE apps[0] ("alpha"): assist.tokensPerDay (whole tokens"#,
                #"APPS_FILE apps[0] ("alpha"): assist.drafts (true or false)"#, #"APPS_FILE apps[0] ("alpha"): assist.auto ("off" or "away")"#,
                #"APPS_FILE apps[0] ("alpha"): assist.autoMinimumMatch (a number from 0 to 1)"#, #"APPS_FILE apps[0] ("alpha"): assist.name (1–80"#,
                #"APPS_FILE apps[1] ("beta"): assist (an object"#,
                #"APPS_FILE apps[2] ("gamma"): assist.auto ("#, #"APPS_FILE apps[2] ("gamma"): assist.autoMinimumMatch ("#,
                #"APPS_FILE apps[2] ("gamma"): assist.name ("#,
            ]
            return expected.allSatisfy { prefix in said.contains { $0.hasPrefix(prefix) } } && !said.contains { $0.contains("unknown field \"assist.auto") }
        }
        // A provider without a model, for one app of several, is named with that app.
        let file = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("apps-\(UUID().uuidString).json")
        try #"""
            {"apps": [{"id": "alpha", "appKey": "alpha-key-0123456789abcdef", "forumChannelID": "201", "assist": {"url": "http://127.0.0.1:1/v1"}},
                      {"id": "beta", "appKey": "beta-key-0123456789abcdef", "forumChannelID": "202"}]}
            """#.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect {
            try ServerConfiguration(environment: ["DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "9", "APPS_FILE": file.path])
        } throws: { error in
            (error as? ConfigurationProblem)?.invalid == [#"APPS_FILE app "alpha": assist.model (or ASSIST_MODEL) required with a provider URL"#]
        }
    }
}
