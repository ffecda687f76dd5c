import DiscordREST
import Foundation
import HTTPTypes
import SoftwareAttester
import Testing
import TestSupport
import ThreadDeskServer
import ThreadDeskStore
import ThreadDeskWire

/// One genuine device cannot multiply its budget by attesting key after key: beside each
/// attested device's own buckets stands its network's, new keys per network are capped, and a
/// session attempt costs its network before its assertion is looked at.
@Suite("App Attest: limits one device cannot multiply") struct AttestNetworkLimitTests {
    let attester: SoftwareAttester

    init() throws { attester = try SoftwareAttester() }

    /// Two devices (two keys of one phone) on one network share its budget of sends and
    /// diagnostics, though each device's own buckets are far from spent.
    @Test func devicesOnOneNetworkShareItsBudgetBesideTheirOwn() async throws {
        try await withServer({ configuration in
            attestConfiguration(attester, mode: .required)(&configuration)
            configuration.quotas.sendsPerAddress = QuotaLimit(100, per: .seconds(60))
            configuration.quotas.sendsPerNetwork = QuotaLimit(3, per: .seconds(3600))
            configuration.quotas.diagnosticsPerAddress = QuotaLimit(100, per: .seconds(3600))
            configuration.quotas.diagnosticsPerNetwork = QuotaLimit(1, per: .seconds(3600))
        }) { server in
            let first = AttestedDevice(attester)
            let second = AttestedDevice(attester)
            let firstToken = try #require(try await first.attest(server).json["token"]?.stringValue)
            let secondToken = try #require(try await second.attest(server).json["token"]?.stringValue)
            #expect(try await first.send(server, token: firstToken, "hello").status == .created)
            #expect(try await server.send("again", token: firstToken).status == .created)
            #expect(try await second.send(server, token: secondToken, "hello").status == .created)
            let posts = server.discordPosts
            let refused = try await server.send("one too many", token: secondToken)
            #expect(refused.isRefused(by: "sends per network"))
            #expect(server.discordPosts == posts)

            func diagnostics(_ device: AttestedDevice, _ token: String) async throws -> Harness.Reply {
                let header = try await device.assertion(server, method: "POST", path: "/v1/diagnostics", body: Data("{}".utf8))
                return try await server.request(
                    .post, "/v1/diagnostics", token: token, headers: [.init(AppAttestAssertion.headerName)!: header], json: "{}")
            }
            #expect(try await diagnostics(first, firstToken).status == .created)
            let spent = try await diagnostics(second, secondToken)
            #expect(spent.isRefused(by: "diagnostics per network"))
        }
    }

    /// A network keeps at most so many new keys a day, however its attestations verify; a key
    /// refused so is not kept, and another network is served.
    @Test func newKeysPerNetworkAreCapped() async throws {
        try await withServer({ configuration in
            attestConfiguration(attester, mode: .required)(&configuration)
            configuration.quotas.newKeysPerNetwork = QuotaLimit(2, per: .seconds(86_400))
            configuration.trustedProxies = ["127.0.0.1"]
        }) { server in
            let here = AppAttestBypassTests.forwarded("203.0.113.9")
            #expect(try await AttestedDevice(attester).attest(server, headers: here).status == .created)
            #expect(try await AttestedDevice(attester).attest(server, headers: here).status == .created)
            let third = AttestedDevice(attester)
            let refused = try await third.attest(server, headers: here)
            #expect(refused.isRefused(by: "new keys per network"))
            #expect(try await server.store.deviceKey(third.deviceID) == nil)
            #expect(try await third.attest(server, headers: AppAttestBypassTests.forwarded("203.0.113.10")).status == .created)
        }
    }

    /// Assertions that fail (a key never attested here) spend the network's session budget like
    /// good ones: the next attempt is refused before its assertion is read.
    @Test func aFailedAssertionCostsItsNetwork() async throws {
        try await withServer({ configuration in
            attestConfiguration(attester, mode: .required)(&configuration)
            configuration.quotas.sessionsPerNetwork = QuotaLimit(3, per: .seconds(3600))
        }) { server in
            let stranger = AttestedDevice(attester)
            func attempt() async throws -> Harness.Reply {
                var headers = AttestedDevice.appKey
                headers[.init(AppAttestAssertion.headerName)!] = try await stranger.assertion(
                    server, method: "POST", path: "/v1/session", body: Data("{}".utf8))
                return try await server.request(.post, "/v1/session", headers: headers, json: "{}")
            }
            for _ in 0..<3 { #expect(try await attempt().errorCode == "assertion_unknown_key") }
            let refused = try await attempt()
            #expect(refused.isRefused(by: "sessions per network"))
            #expect(try await server.metric(#"threaddesk_app_attest_total{step="assertion",outcome="assertion_unknown_key"}"#) == 3)
        }
    }
}

extension Harness.Reply {
    /// Whether this is a limit's refusal (429 `rate_limited` with `Retry-After`) naming `quota`.
    func isRefused(by quota: String) -> Bool {
        status == .tooManyRequests && errorCode == "rate_limited" && headers[.retryAfter] != nil
            && json["error"]?["message"]?.stringValue?.contains(quota) == true
    }
}
