import Foundation
import Testing
import ThreadDeskCore
@testable import ThreadDeskServer

/// Webhooks as the configuration names them: `WEBHOOK_*` for one app, `webhooks` per app in
/// `APPS_FILE`; every problem named, the secret never shown.
@Suite struct WebhookConfigurationTests {
    static let secret = "webhook-secret-0123456789abcdef-0123"

    static func secretFile(_ content: String = secret) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("webhook-secret-\(UUID().uuidString)")
        try Data((content + "\n").utf8).write(to: file)
        return file
    }

    @Test func theOneAppsWebhookComesFromTheEnvironment() throws {
        let file = try Self.secretFile()
        var environment = ConfigurationTests.complete
        environment["WEBHOOK_URL"] = "https://hooks.example.com/threaddesk?source=td"
        environment["WEBHOOK_SECRET_FILE"] = file.path
        environment["WEBHOOK_EVENTS"] = "message.created, rating.submitted"
        environment["WEBHOOK_TIMEOUT_SECONDS"] = "3"
        let configuration = try ServerConfiguration(environment: environment)
        let hooks = try #require(configuration.catalog[.default]).webhooks
        #expect(hooks.map(\.url.absoluteString) == ["https://hooks.example.com/threaddesk?source=td"])
        #expect(hooks.first?.secret == Self.secret && hooks.first?.events == [.messageCreated, .ratingSubmitted])
        #expect(configuration.webhooks.timeout == .seconds(3))
        // Printed, the configuration shows neither the secret nor the URL's query.
        let printed = String(reflecting: configuration) + "\(configuration)" + String(reflecting: configuration.catalog.apps)
        #expect(!printed.contains(Self.secret) && !printed.contains("source=td"))
        #expect(try ServerConfiguration(environment: ConfigurationTests.complete).catalog.apps[0].webhooks.isEmpty)
    }

    @Test func aBadWebhookIsNamed() throws {
        let short = try Self.secretFile("short")
        var environment = ConfigurationTests.complete
        environment["WEBHOOK_URL"] = "ftp://example.com"
        environment["WEBHOOK_SECRET_FILE"] = short.path
        environment["WEBHOOK_EVENTS"] = "message.created,message.exploded"
        #expect(throws: ServerConfiguration.Problem(missing: [], invalid: [
            "WEBHOOK_URL (an http or https URL)", "WEBHOOK_SECRET_FILE (at least 32 characters)",
            "WEBHOOK_EVENTS (event types separated by commas: \(WebhookEventType.allCases.map(\.rawValue).joined(separator: ",")), or *)",
        ])) { try ServerConfiguration(environment: environment) }
        var noSecret = ConfigurationTests.complete
        noSecret["WEBHOOK_URL"] = "https://hooks.example.com"
        #expect(throws: ServerConfiguration.Problem(missing: ["WEBHOOK_SECRET_FILE"], invalid: [])) { try ServerConfiguration(environment: noSecret) }
    }

    @Test func eachAppNamesItsWebhooksInTheAppsFile() throws {
        let file = try Self.secretFile()
        let json = """
            {"apps": [
              {"id": "shop", "appKey": "shop-key-0123456789", "forumChannelID": "1",
               "webhooks": [{"url": "https://hooks.example.com/a", "secretFile": "\(file.lastPathComponent)", "events": ["crash.reported"]},
                            {"url": "http://127.0.0.1:9000/b", "secretFile": "\(file.path)"}]},
              {"id": "news", "appKey": "news-key-0123456789", "forumChannelID": "2",
               "webhooks": [{"url": "mailto:x", "events": ["nope"], "colour": 1}]}
            ]}
            """
        #expect(throws: ConfigurationProblem(missing: [], invalid: [
            "APPS_FILE apps[1] (\"news\"): unknown field \"webhooks[0].colour\"", "APPS_FILE apps[1] (\"news\"): webhooks[0].url (an http or https URL)",
            "APPS_FILE apps[1] (\"news\"): webhooks[0].secretFile missing (a file holding the signing secret)",
            "APPS_FILE apps[1] (\"news\"): webhooks[0].events (a list of event types: \(WebhookEventType.allCases.map(\.rawValue).joined(separator: ", ")), or [\"*\"])",
        ])) { try AppsFile.parse(Data(json.utf8), guildID: "9", relativeTo: FileManager.default.temporaryDirectory) }
        let good = json.replacingOccurrences(of: #"[{"url": "mailto:x", "events": ["nope"], "colour": 1}]"#, with: "[]")
        let apps = try AppsFile.parse(Data(good.utf8), guildID: "9", relativeTo: FileManager.default.temporaryDirectory)
        #expect(apps[0].webhooks.map(\.events) == [[.crashReported], Set(WebhookEventType.allCases)])
        #expect(apps[0].webhooks.allSatisfy { $0.secret == Self.secret })
        #expect(apps[1].webhooks.isEmpty)
        // One URL is two webhooks in two apps: each its own key.
        let shop = try #require(AppID("shop")), news = try #require(AppID("news"))
        #expect(apps[0].webhooks[0].key(app: shop) != apps[0].webhooks[0].key(app: news))
    }

    @Test func withAnAppsFileTheOneAppVariablesAreRefused() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("apps-\(UUID().uuidString).json")
        try Data(#"{"apps": [{"id": "shop", "appKey": "shop-key-0123456789", "forumChannelID": "1"}]}"#.utf8).write(to: file)
        let environment = ["DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "9", "APPS_FILE": file.path, "WEBHOOK_URL": "https://hooks.example.com"]
        #expect(throws: ServerConfiguration.Problem(missing: [], invalid: ["WEBHOOK_URL (set per app in APPS_FILE: webhooks)"])) {
            try ServerConfiguration(environment: environment)
        }
    }

    @Test func theSignatureIsTheHMACOfTheTimeAndTheBody() {
        let body = Data(#"{"id":"whd_1"}"#.utf8)
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        let header = WebhookSignature.value(body: body, secret: "s3cret", at: at)
        // openssl: printf '1800000000.{"id":"whd_1"}' | openssl dgst -sha256 -hmac s3cret
        #expect(header == "t=1800000000,v1=6e4556db06daf2a909c30d679d3273e9a6f25080618764dfe04b90021650a07f")
        #expect(WebhookSignature.verify(header, body: body, secret: "s3cret", now: at.addingTimeInterval(299)))
        #expect(!WebhookSignature.verify(header, body: body, secret: "s3cret", now: at.addingTimeInterval(301)), "past the tolerance")
        #expect(!WebhookSignature.verify(header, body: body, secret: "other", now: at))
        #expect(!WebhookSignature.verify("v1=" + header.split(separator: "=").last!, body: body, secret: "s3cret", now: at), "no time, no match")
    }
}
