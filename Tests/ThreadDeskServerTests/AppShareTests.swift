import DiscordREST
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing
import TestSupport
@testable import ThreadDeskServer
import ThreadDeskCore
import ThreadDeskSettings
import ThreadDeskStore

/// The deployment's thread budget and streams, shared by its apps: an app that reserved a share
/// (`limits` in the apps file) keeps it whatever another app's key is used for, and spends no more
/// than it; the apps without one share what is left.
@Suite("Limits every app shares", .timeLimit(.minutes(3)))
struct AppShareTests {
    static let alphaKey = "alpha-key-0123456789abcdef"
    static let betaKey = "beta-key-0123456789abcdef"

    /// Alpha (no share) and beta (2 of 5 threads an hour, 2 of 4 streams).
    static func sharing(_ configuration: inout ServerConfiguration) {
        configuration.quotas.threadsTotal = QuotaLimit(5, per: .seconds(3600))
        configuration.live.maxStreams = 4
        configuration.apps?[1].limits = AppLimits(threadsPerHour: 2, streams: 2)
    }

    static func firstMessage(_ server: Harness, key: String) async throws -> Harness.Reply {
        let user = try await AppsTests.open(server, key: key, user: nil)
        let token = try #require(user.json["token"]?.stringValue)
        return try await server.accept("hello", token: token)
    }

    @Test func oneAppsFloodOfNewThreadsLeavesAnotherAppsShare() async throws {
        try await withServer(prepare: AppsTests.twoApps(), Self.sharing) { server in
            var alpha: [UInt] = []
            for _ in 0..<5 { alpha.append(UInt(try await Self.firstMessage(server, key: Self.alphaKey).status.code)) }
            // Alpha has what beta did not reserve (3), however many sessions its key opens.
            #expect(alpha == [201, 201, 201, 429, 429], "alpha's first messages: \(alpha)")
            for _ in 0..<2 { #expect(try await Self.firstMessage(server, key: Self.betaKey).status == .created) }
            // Beta's share is all it has: the pool is not beta's to spend.
            let over = try await Self.firstMessage(server, key: Self.betaKey)
            #expect(over.status == .tooManyRequests && over.errorCode == "rate_limited", "\(over.status) \(over.errorCode ?? "")")
        }
    }

    @Test func oneAppsStreamsLeaveAnotherAppsShare() async throws {
        try await withServer(prepare: AppsTests.twoApps(), Self.sharing) { server in
            let port = try #require(server.client.port)
            func token(_ key: String) async throws -> String {
                try #require(try await AppsTests.open(server, key: key, user: nil).json["token"]?.stringValue)
            }
            var streams: [EventStreamClient] = []
            defer { for stream in streams { stream.close() } }
            for _ in 0..<3 { streams.append(try await EventStreamClient.open(port: port, token: try await token(Self.alphaKey))) }
            // Alpha opens what beta did not reserve (2 of 4), then is refused.
            #expect(streams.map(\.status) == [200, 200, 503], "alpha's streams: \(streams.map(\.status))")
            for _ in 0..<2 {
                let stream = try await EventStreamClient.open(port: port, token: try await token(Self.betaKey))
                streams.append(stream)
                #expect(stream.status == 200)
            }
            let over = try await EventStreamClient.open(port: port, token: try await token(Self.betaKey))
            streams.append(over)
            #expect(over.status == 503)
        }
    }

    @Test func sharesAreReadFromTheAppsFileAndCheckedAgainstTheDeploymentsLimits() throws {
        func apps(_ limits: String) throws(ConfigurationProblem) -> [AppSettings] {
            let json = """
                {"apps": [
                  {"id": "alpha", "appKey": "alpha-key-0123456789abcdef", "forumChannelID": "1", "guildID": "9"},
                  {"id": "beta", "appKey": "beta-key-0123456789abcdef", "forumChannelID": "2", "guildID": "9", "limits": \(limits)}
                ]}
                """
            return try AppsFile.parse(Data(json.utf8), guildID: nil, relativeTo: URL(fileURLWithPath: "/"))
        }
        let read = try apps(#"{"threadsPerHour": 50, "streams": 2000}"#)
        #expect(read[1].limits == AppLimits(threadsPerHour: 50, streams: 2000))
        #expect(read[0].limits == nil)
        for bad in [#"{"threads": 5}"#, #"{"streams": 0}"#, #"{"streams": true}"#, #"{"threadsPerHour": 1.5}"#, "5"] {
            #expect(throws: ConfigurationProblem.self, "\(bad)") { try apps(bad) }
        }
        let catalog = AppCatalog(try apps(#"{"threadsPerHour": 200, "streams": 100}"#))
        // All 200 an hour for beta would leave alpha nothing.
        #expect(catalog.shareProblems(threadsTotal: QuotaLimit(200, per: .seconds(3600)), maxStreams: 20_000).count == 1)
        #expect(catalog.shareProblems(threadsTotal: QuotaLimit(201, per: .seconds(3600)), maxStreams: 20_000).isEmpty)
        #expect(catalog.shareProblems(threadsTotal: QuotaLimit(201, per: .seconds(3600)), maxStreams: 100).count == 1)
    }
}
