import AppAttest
import Crypto
import DiscordEmulator
import Foundation
import HTTPTypes
import SoftwareAttester
import Synchronization
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer
import ThreadDeskStore
import ThreadDeskWire

/// A device with App Attest, as the tests drive it: the software attester stands in for the
/// Secure Enclave, its root is the server's `APP_ATTEST_EXTRA_ROOT`.
struct AttestedDevice: Sendable {
    let attester: SoftwareAttester
    let key: SoftwareAttester.Key

    init(_ attester: SoftwareAttester) {
        self.attester = attester
        key = attester.generateKey()
    }

    /// The device's id in the store: its key id, base64url.
    var deviceID: String {
        key.idBase64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static let appKey: HTTPFields = [.init("X-App-Key")!: "test-app-key"]

    func challenge(_ server: Harness) async throws -> String {
        let reply = try await server.request(.post, "/v1/attest/challenge", headers: Self.appKey)
        guard reply.status == .created, let challenge = reply.json["challenge"]?.stringValue else {
            throw HarnessError.unexpected(reply.status, String(decoding: reply.body, as: UTF8.self))
        }
        return challenge
    }

    /// `POST /v1/session` with an attestation over `challenge` (a fresh one when nil); for the
    /// user of `session` (its token beside the app key) with `installation` when given.
    func attest(
        _ server: Harness, challenge: String? = nil, keyID: [UInt8]? = nil, faults: SoftwareAttester.Faults = .init(),
        by attester: SoftwareAttester? = nil, session: (userId: String, token: String)? = nil,
        installation: [String: InstallationValue]? = nil, headers extra: HTTPFields = [:]
    ) async throws -> Harness.Reply {
        let challenge = if let challenge { challenge } else { try await self.challenge(server) }
        let object = try (attester ?? self.attester).attest(key, clientDataHash: Array(SHA256.hash(data: Data(challenge.utf8))), faults: faults)
        let body = SessionRequest(userId: session?.userId, installation: installation, attestation: AttestationPayload(
            keyId: Data(keyID ?? key.id).base64EncodedString(), attestationObject: Data(object).base64EncodedString(), challenge: challenge))
        var headers = Self.appKey
        if let session { headers[.authorization] = "Bearer \(session.token)" }
        headers.append(contentsOf: extra)
        return try await server.request(.post, "/v1/session", headers: headers, json: String(decoding: try JSONEncoder().encode(body), as: UTF8.self))
    }

    /// The assertion header for a request (`counter` forces the authenticator's counter).
    func assertion(
        _ server: Harness, method: String, path: String, body: Data, counter: UInt32? = nil, challenge: String? = nil
    ) async throws -> String {
        let challenge = if let challenge { challenge } else { try await self.challenge(server) }
        let clientData = AppAttestAssertion.clientData(method: method, path: path, challenge: challenge, body: Array(body))
        let assertion = try attester.assert(key, clientDataHash: Array(SHA256.hash(data: clientData)), counter: counter)
        return AppAttestAssertion.header(keyId: key.idBase64, challenge: challenge, assertion: Data(assertion).base64EncodedString())
    }

    /// A first message (which needs an assertion), signed over `signed` and sending `sent`.
    func send(_ server: Harness, token: String, _ sent: String, signed: String? = nil, counter: UInt32? = nil) async throws -> Harness.Reply {
        func body(_ text: String) -> Data { try! JSONEncoder().encode(["content": text]) }
        let header = try await assertion(server, method: "POST", path: "/v1/messages", body: body(signed ?? sent), counter: counter)
        let reply = try await server.request(
            .post, "/v1/messages", token: token,
            headers: [.init("Idempotency-Key")!: UUID().uuidString, .init(AppAttestAssertion.headerName)!: header], raw: body(sent))
        // Accepted: delivered by the outbox once the server's work is done (as `Harness.send`).
        if reply.status == .created { try await server.settled() }
        return reply
    }
}

extension Harness {
    /// Every request Discord's emulator has received.
    var discordRequests: Int { emulator.counters.requestsByRoute.values.reduce(0, +) }
}

func attestConfiguration(_ attester: SoftwareAttester, mode: AppAttestSettings.Mode) -> @Sendable (inout ServerConfiguration) -> Void {
    { configuration in
        configuration.attest.mode = mode
        configuration.attest.teamID = attester.teamID
        configuration.attest.bundleIDs = [attester.bundleID, "com.example.other"]
        configuration.attest.extraRootPEM = attester.rootCertificatePEM
    }
}

@Suite("App Attest") struct AppAttestServerTests {
    let attester: SoftwareAttester

    init() throws { attester = try SoftwareAttester() }

    /// The metric names a refusal as the client is told it, but for a key no longer trusted.
    @Test(arguments: [
        DeviceCheckFailure.attestationRequired, .assertionRequired, .challenge(.used), .challenge(.expired), .challenge(.unknown),
        .attestation(.malformed("x")), .attestation(.untrustedChain), .attestation(.nonceMismatch), .attestation(.rpIDMismatch),
        .attestation(.counterNotZero), .attestation(.wrongEnvironment), .attestation(.keyIDMismatch),
        .attestation(.credentialIDMismatch), .attestation(.invalidSignature), .attestation(.staleCounter),
        .assertion(.malformed("x")), .assertion(.rpIDMismatch), .assertion(.staleCounter), .assertion(.invalidSignature),
        .assertion(.untrustedChain), .keyAlreadyAttested, .unknownKey, .wrongDevice,
    ])
    func aRefusalIsCountedUnderItsErrorCode(_ failure: DeviceCheckFailure) {
        #expect(failure.outcome == APIError(failure).code.rawValue)
    }

    @Test func aKeyNoLongerTrustedIsCountedAsWhatItIs() {
        #expect(DeviceCheckFailure.keyNoLongerTrusted.outcome == "key_untrusted")
        #expect(APIError(DeviceCheckFailure.keyNoLongerTrusted).code == .attestationRequired)
    }

    @Test func anAttestationOpensASessionAndTheDeviceSignsItsFirstMessage() async throws {
        try await withServer(attestConfiguration(attester, mode: .optional)) { server in
            let device = AttestedDevice(attester)
            let opened = try await device.attest(server)
            #expect(opened.status == .created)
            let token = try #require(opened.json["token"]?.stringValue)
            // The first message opens a forum thread: unsigned, it is refused before Discord.
            let before = server.discordRequests
            let unsigned = try await server.send("hello", token: token)
            #expect(unsigned.status == .unauthorized)
            #expect(unsigned.errorCode == "assertion_required")
            #expect(server.discordRequests == before)
            let signed = try await device.send(server, token: token, "hello")
            #expect(signed.status == .created)
            #expect(server.discordPosts == 1)
            // Later texts need no assertion.
            #expect(try await server.send("again", token: token).status == .created)
            // Diagnostics always do.
            let diagnostics = try await server.request(.post, "/v1/diagnostics", token: token, json: #"{"a":1}"#)
            #expect(diagnostics.errorCode == "assertion_required")
            let header = try await device.assertion(server, method: "POST", path: "/v1/diagnostics", body: Data(#"{"a":1}"#.utf8))
            let accepted = try await server.request(
                .post, "/v1/diagnostics", token: token, headers: [.init(AppAttestAssertion.headerName)!: header], json: #"{"a":1}"#)
            #expect(accepted.status == .created)
            // Counted for the operator: one key kept, two assertions accepted, two asked for.
            #expect(try await server.metric(#"threaddesk_app_attest_total{step="attestation",outcome="accepted"}"#) == 1)
            #expect(try await server.metric(#"threaddesk_app_attest_total{step="assertion",outcome="accepted"}"#) == 2)
            #expect(try await server.metric(#"threaddesk_app_attest_total{step="assertion",outcome="assertion_required"}"#) == 2)
        }
    }

    @Test func eachBrokenRuleIsRefusedWithItsOwnCodeAndNothingReachesDiscord() async throws {
        let other = try SoftwareAttester()
        try await withServer(attestConfiguration(attester, mode: .required)) { server in
            // A user with a thread: a session of theirs with new device info posts a note there,
            // so each refused attempt below would reach Discord had it been let through.
            let first = AttestedDevice(attester)
            let opened = try await first.attest(server)
            let user = (userId: try #require(opened.json["userId"]?.stringValue), token: try #require(opened.json["token"]?.stringValue))
            #expect(try await first.send(server, token: user.token, "hello").status == .created)
            let before = server.discordRequests
            let device = AttestedDevice(attester)
            var version = 0
            func attempt(
                challenge: String? = nil, keyID: [UInt8]? = nil, faults: SoftwareAttester.Faults = .init(), by: SoftwareAttester? = nil
            ) async throws -> Harness.Reply {
                version += 1
                return try await device.attest(
                    server, challenge: challenge, keyID: keyID, faults: faults, by: by, session: user, installation: ["appVersion": .string("\(version).0")])
            }
            let cases: [(String, () async throws -> Harness.Reply)] = [
                ("attestation_untrusted", { try await attempt(by: other) }),
                ("attestation_nonce_mismatch", { try await attempt(faults: .init(nonce: true)) }),
                ("attestation_app_id_mismatch", { try await attempt(faults: .init(appID: "TEAMID1234.com.example.third")) }),
                ("attestation_counter_not_zero", { try await attempt(faults: .init(counter: 1)) }),
                ("attestation_wrong_environment", { try await attempt(faults: .init(aaguid: Array("appattestfuture0".utf8))) }),
                ("attestation_key_id_mismatch", { try await attempt(keyID: AttestedDevice(self.attester).key.id) }),
                ("attestation_credential_id_mismatch", { try await attempt(faults: .init(credentialID: [UInt8](repeating: 9, count: 32))) }),
                ("challenge_unknown", { try await attempt(challenge: "never-issued") }),
                ("attestation_malformed", {
                    var headers = AttestedDevice.appKey
                    headers[.authorization] = "Bearer \(user.token)"
                    return try await server.request(.post, "/v1/session", headers: headers,
                        json: #"{"userId":"\#(user.userId)","installation":{"appVersion":"9.9"},"attestation":{"keyId":"AAAA","attestationObject":"%%","challenge":"x"}}"#)
                }),
            ]
            for (code, attempt) in cases {
                let reply = try await attempt()
                #expect(reply.errorCode == code, "\(code): \(String(decoding: reply.body, as: UTF8.self))")
                #expect((400..<500).contains(reply.status.code))
            }
            // A challenge is spent by its first use, good or bad.
            let challenge = try await device.challenge(server)
            _ = try await attempt(challenge: challenge, faults: .init(nonce: true))
            #expect(try await attempt(challenge: challenge).errorCode == "challenge_used")
            #expect(server.discordRequests == before)
            // The same key, attested properly: the note of the new device info reaches the thread.
            #expect(try await attempt().status == .created)
            #expect(server.discordRequests > before)
            #expect(try await device.attest(server).errorCode == "attestation_key_known")
        }
    }

    @Test func aProductionOnlyServerRefusesDevelopmentKeys() async throws {
        try await withServer({ configuration in
            attestConfiguration(attester, mode: .required)(&configuration)
            // Not through the environment (which refuses an extra root with production): a test's own setting.
            configuration.attest.environments = [.production]
        }) { server in
            let reply = try await AttestedDevice(attester).attest(server)
            #expect(reply.errorCode == "attestation_wrong_environment")
        }
    }

    @Test func aChallengeExpiresOnTheServersClock() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), attestConfiguration(attester, mode: .required)) { server in
            let device = AttestedDevice(attester)
            let late = try await device.challenge(server)
            clock.advance(by: .seconds(299))
            let inTime = try await device.challenge(server)
            clock.advance(by: .seconds(2))
            #expect(try await device.attest(server, challenge: late).errorCode == "challenge_expired")
            #expect(try await device.attest(server, challenge: inTime).status == .created)
        }
    }

    /// A device not seen for `APP_ATTEST_FORGET_DAYS` is forgotten when others attest; one that
    /// signed a request within them is kept, and so is one that only read its conversation (a
    /// session served is a use). The forgotten one attests anew.
    @Test func keysUnusedForTheForgetDaysAreForgottenAndAttestAnew() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), { configuration in
            attestConfiguration(attester, mode: .required)(&configuration)
            configuration.attest.forgetKeysAfter = .seconds(30 * 86_400)
        }) { server in
            let idle = AttestedDevice(attester)
            let busy = AttestedDevice(attester)
            let reader = AttestedDevice(attester)
            let idleToken = try #require(try await idle.attest(server).json["token"]?.stringValue)
            let token = try #require(try await busy.attest(server).json["token"]?.stringValue)
            let readerToken = try #require(try await reader.attest(server).json["token"]?.stringValue)
            // Read at once: noted the same day as the attestation, nothing more.
            #expect(try await server.request(.get, "/v1/messages", token: idleToken).status == .ok)
            clock.advance(by: .seconds(20 * 86_400))
            #expect(try await busy.send(server, token: token, "still here").status == .created)
            #expect(try await server.request(.get, "/v1/messages", token: readerToken).status == .ok)
            clock.advance(by: .seconds(15 * 86_400))
            // Day 35: a new device attests; the idle one (unused since day 0) is forgotten, the
            // busy one and the reader (day 20) kept.
            #expect(try await AttestedDevice(attester).attest(server).status == .created)
            #expect(try await server.store.deviceKey(idle.deviceID) == nil)
            #expect(try await server.store.deviceKey(busy.deviceID) != nil)
            #expect(try await server.store.deviceKey(reader.deviceID) != nil)
            let renewal = try await idle.assertion(server, method: "POST", path: "/v1/session", body: Data("{}".utf8))
            var headers = AttestedDevice.appKey
            headers[.init(AppAttestAssertion.headerName)!] = renewal
            #expect(try await server.request(.post, "/v1/session", headers: headers, json: "{}").errorCode == "assertion_unknown_key")
            #expect(try await idle.attest(server).status == .created)
            #expect(try await server.store.deviceKey(idle.deviceID) != nil)
        }
    }

    @Test func requiredRefusesSessionsWithoutAttestation() async throws {
        try await withServer(attestConfiguration(attester, mode: .required)) { server in
            let reply = try await server.request(.post, "/v1/session", headers: AttestedDevice.appKey, json: "{}")
            #expect(reply.status == .unauthorized)
            #expect(reply.errorCode == "attestation_required")
        }
        // The same request where attestation is optional: served.
        try await withServer(attestConfiguration(attester, mode: .optional)) { server in
            let reply = try await server.request(.post, "/v1/session", headers: AttestedDevice.appKey, json: "{}")
            #expect(reply.status == .created)
        }
    }

    @Test func anAssertionWithAStaleCounterOrAnotherBodyIsRefused() async throws {
        try await withServer(attestConfiguration(attester, mode: .required)) { server in
            let device = AttestedDevice(attester)
            let token = try #require(try await device.attest(server).json["token"]?.stringValue)
            let tampered = try await device.send(server, token: token, "pay 1000", signed: "pay 1")
            #expect(tampered.errorCode == "assertion_invalid")
            #expect(try await device.send(server, token: token, "hello", counter: 5).status == .created)
            // A later request whose authenticator counter is not past 5: a replay.
            let stale = try await device.assertion(server, method: "POST", path: "/v1/diagnostics", body: Data("{}".utf8), counter: 5)
            let replayed = try await server.request(
                .post, "/v1/diagnostics", token: token, headers: [.init(AppAttestAssertion.headerName)!: stale], json: "{}")
            #expect(replayed.errorCode == "assertion_replayed")
            #expect(try await server.store.deviceKey(device.deviceID)?.counter == 5)
            // Another attested device's assertion on this session's request.
            let stranger = AttestedDevice(attester)
            #expect(try await stranger.attest(server).status == .created)
            let wrong = try await stranger.assertion(server, method: "POST", path: "/v1/diagnostics", body: Data("{}".utf8))
            let refused = try await server.request(
                .post, "/v1/diagnostics", token: token, headers: [.init(AppAttestAssertion.headerName)!: wrong], json: "{}")
            #expect(refused.errorCode == "assertion_wrong_device")
        }
    }

    @Test func renewingAnAttestedSessionNeedsItsDevicesAssertion() async throws {
        try await withServer(attestConfiguration(attester, mode: .optional)) { server in
            let device = AttestedDevice(attester)
            let opened = try await device.attest(server)
            let token = try #require(opened.json["token"]?.stringValue)
            let user = try #require(opened.json["userId"]?.stringValue)
            #expect(token.hasSuffix(".\(device.deviceID)"))
            var headers = AttestedDevice.appKey
            headers[.authorization] = "Bearer \(token)"
            let body = #"{"userId":"\#(user)"}"#
            let unsigned = try await server.request(.post, "/v1/session", headers: headers, json: body)
            #expect(unsigned.errorCode == "assertion_required")
            headers[.init(AppAttestAssertion.headerName)!] = try await device.assertion(
                server, method: "POST", path: "/v1/session", body: Data(body.utf8))
            let renewed = try await server.request(.post, "/v1/session", headers: headers, json: body)
            #expect(renewed.status == .created)
            // The same user, on the same device.
            #expect(renewed.json["userId"]?.stringValue == user)
            #expect(renewed.json["token"]?.stringValue?.hasSuffix(".\(device.deviceID)") == true)
        }
    }

    @Test func perDeviceLimitsHoldWhileUnattestedCallersFromTheSameAddressAreLimitedApart() async throws {
        try await withServer({ configuration in
            attestConfiguration(attester, mode: .optional)(&configuration)
            configuration.quotas.sessionsPerAddress = QuotaLimit(2, per: .seconds(3600))
            configuration.quotas.unattestedSessionsPerAddress = QuotaLimit(1, per: .seconds(3600))
            configuration.quotas.challengesPerAddress = QuotaLimit(100, per: .seconds(3600))
        }) { server in
            let first = AttestedDevice(attester)
            let second = AttestedDevice(attester)
            // Device one: its attestation and one renewal, then its own bucket is empty.
            let token = try #require(try await first.attest(server).json["token"]?.stringValue)
            func renew(_ device: AttestedDevice, _ token: String) async throws -> Harness.Reply {
                var headers = AttestedDevice.appKey
                headers[.authorization] = "Bearer \(token)"
                headers[.init(AppAttestAssertion.headerName)!] = try await device.assertion(
                    server, method: "POST", path: "/v1/session", body: Data("{}".utf8))
                return try await server.request(.post, "/v1/session", headers: headers, json: "{}")
            }
            #expect(try await renew(first, token).status == .created)
            let third = try await renew(first, token)
            #expect(third.status == .tooManyRequests)
            #expect(third.errorCode == "rate_limited")
            // From the same address: another device has its own bucket…
            let secondToken = try #require(try await second.attest(server).json["token"]?.stringValue)
            // …and unattested callers theirs, the tighter one.
            #expect(try await server.request(.post, "/v1/session", headers: AttestedDevice.appKey, json: "{}").status == .created)
            let spent = try await server.request(.post, "/v1/session", headers: AttestedDevice.appKey, json: "{}")
            #expect(spent.status == .tooManyRequests)
            #expect(spent.json["error"]?["message"]?.stringValue?.contains("unattested") == true)
            // The second device is still served after the address is spent.
            #expect(try await renew(second, secondToken).status == .created)
        }
    }
}

@Suite("App Attest settings") struct AppAttestSettingsTests {
    @Test func offByDefaultAndReadFromTheEnvironment() throws {
        #expect(try ServerConfiguration(environment: ConfigurationTests.complete).attest.mode == .off)
        let attester = try SoftwareAttester()
        var environment = ConfigurationTests.complete
        environment.merge([
            "APP_ATTEST": "optional", "APP_ATTEST_TEAM_ID": "ABCDE12345", "APP_ATTEST_BUNDLE_IDS": "com.a.app, com.a.clip",
            "APP_ATTEST_ENVIRONMENT": "development", "APP_ATTEST_EXTRA_ROOT": attester.rootCertificatePEM,
        ]) { $1 }
        let settings = try ServerConfiguration(environment: environment).attest
        #expect(settings.mode == .optional)
        #expect(settings.appIDs == ["ABCDE12345.com.a.app", "ABCDE12345.com.a.clip"])
        #expect(settings.environments == [.development])
        #expect(settings.extraRootPEM == attester.rootCertificatePEM)
        #expect(settings.forgetKeysAfter == .seconds(365 * 86_400))
        try expectDays("APP_ATTEST_FORGET_DAYS", in: environment) { $0.attest.forgetKeysAfter }
    }

    @Test func requiredLeavesNoWayRoundThroughTheLegacyRoutes() throws {
        var environment = ConfigurationTests.complete
        environment.merge(["APP_ATTEST": "required", "APP_ATTEST_TEAM_ID": "ABCDE12345", "APP_ATTEST_BUNDLE_IDS": "com.a.app"]) { $1 }
        #expect(try ServerConfiguration(environment: environment).attest.mode == .required)
        environment["LEGACY_API_KEY"] = "legacy"
        #expect(throws: ServerConfiguration.Problem(
            missing: [], invalid: ["LEGACY_API_KEY (not with APP_ATTEST=required: the legacy routes cannot be attested)"])
        ) {
            try ServerConfiguration(environment: environment)
        }
    }

    @Test func anExtraRootIsRefusedWithProductionAndTheAppMustBeNamed() throws {
        var environment = ConfigurationTests.complete
        environment.merge([
            "APP_ATTEST": "required", "APP_ATTEST_ENVIRONMENT": "production", "APP_ATTEST_EXTRA_ROOT": try SoftwareAttester().rootCertificatePEM,
        ]) { $1 }
        #expect {
            try ServerConfiguration(environment: environment)
        } throws: { error in
            guard let problem = error as? ServerConfiguration.Problem else { return false }
            return problem.missing == ["APP_ATTEST_TEAM_ID", "APP_ATTEST_BUNDLE_IDS"]
                && problem.invalid.contains { $0.hasPrefix("APP_ATTEST_EXTRA_ROOT (only with APP_ATTEST_ENVIRONMENT=development") }
        }
    }

    /// Unset, the environment accepts production keys too: a test root beside them is refused.
    @Test func anExtraRootNeedsTheDevelopmentEnvironmentSetExplicitly() throws {
        var environment = ConfigurationTests.complete
        environment.merge([
            "APP_ATTEST": "optional", "APP_ATTEST_TEAM_ID": "ABCDE12345", "APP_ATTEST_BUNDLE_IDS": "com.a.app",
            "APP_ATTEST_EXTRA_ROOT": try SoftwareAttester().rootCertificatePEM,
        ]) { $1 }
        #expect(throws: ServerConfiguration.Problem(missing: [], invalid: [
            "APP_ATTEST_EXTRA_ROOT (only with APP_ATTEST_ENVIRONMENT=development set explicitly: a test root must never attest production keys)",
        ])) {
            try ServerConfiguration(environment: environment)
        }
        environment["APP_ATTEST_ENVIRONMENT"] = "development"
        #expect(try ServerConfiguration(environment: environment).attest.extraRootPEM != nil)
    }
}

/// What a security review of App Attest found: each a way round it, closed.
@Suite("App Attest: ways round it") struct AppAttestBypassTests {
    let attester: SoftwareAttester

    init() throws { attester = try SoftwareAttester() }

    static func forwarded(_ address: String) -> HTTPFields { [.init("X-Forwarded-For")!: address] }

    /// A bearer token beside the app key is not checked: its device part must not pick the limits'
    /// bucket, or each made-up device would get a fresh one.
    @Test func aForgedDevicePartBesideTheAppKeyIsNoLimitsKey() async throws {
        try await withServer({ configuration in
            attestConfiguration(attester, mode: .optional)(&configuration)
            configuration.quotas.challengesPerAddress = QuotaLimit(3, per: .seconds(3600))
        }) { (server: Harness) async throws in
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<4 {
                var headers = AttestedDevice.appKey
                headers[.authorization] = "Bearer x~y.\(UserToken.generate())"
                statuses.append(try await server.request(.post, "/v1/attest/challenge", headers: headers).status)
            }
            #expect(statuses == [.created, .created, .created, .tooManyRequests])
        }
    }

    /// However many addresses ask, the app's bucket bounds the challenges the store holds.
    @Test func challengesHaveACapForTheWholeApp() async throws {
        try await withServer({ configuration in
            attestConfiguration(attester, mode: .optional)(&configuration)
            configuration.quotas.challengesPerApp = QuotaLimit(2, per: .seconds(60))
            configuration.trustedProxies = ["127.0.0.1"]
        }) { (server: Harness) async throws in
            var replies: [Harness.Reply] = []
            for address in ["203.0.113.1", "203.0.113.2", "203.0.113.3"] {
                var headers = AttestedDevice.appKey
                headers.append(contentsOf: Self.forwarded(address))
                replies.append(try await server.request(.post, "/v1/attest/challenge", headers: headers))
            }
            #expect(replies.map(\.status) == [.created, .created, .tooManyRequests])
            #expect(replies[2].json["error"]?["message"]?.stringValue?.contains("per app") == true)
        }
    }

    /// Every attempt to attest counts against the address, failed ones too; one address cannot
    /// mint devices without end, while another address is served.
    @Test func attestationAttemptsAreLimitedPerAddressFailedOnesToo() async throws {
        try await withServer({ configuration in
            attestConfiguration(attester, mode: .optional)(&configuration)
            configuration.quotas.attestationsPerAddress = QuotaLimit(2, per: .seconds(3600))
            configuration.trustedProxies = ["127.0.0.1"]
        }) { (server: Harness) async throws in
            let here = Self.forwarded("203.0.113.7")
            let device = AttestedDevice(attester)
            #expect(try await device.attest(server, faults: .init(nonce: true), headers: here).errorCode == "attestation_nonce_mismatch")
            #expect(try await AttestedDevice(attester).attest(server, headers: here).status == .created)
            let refused = try await device.attest(server, headers: here)
            #expect(refused.isRefused(by: "attestations per address"))
            #expect(try await server.store.deviceKey(device.deviceID) == nil)
            #expect(try await device.attest(server, headers: Self.forwarded("203.0.113.8")).status == .created)
        }
    }

    /// The key is kept only once the session limit said yes: a refused attestation leaves nothing.
    @Test func aKeyIsKeptOnlyAfterTheSessionLimitSaidYes() async throws {
        try await withServer({ configuration in
            attestConfiguration(attester, mode: .optional)(&configuration)
            configuration.quotas.sessionsPerApp = QuotaLimit(1, per: .seconds(3600))
        }) { (server: Harness) async throws in
            #expect(try await AttestedDevice(attester).attest(server).status == .created)
            let refused = AttestedDevice(attester)
            #expect(try await refused.attest(server).status == .tooManyRequests)
            #expect(try await server.store.deviceKey(refused.deviceID) == nil)
        }
    }

    /// Many attested devices from one address still share its budget of new threads.
    @Test func attestedDevicesFromOneAddressShareItsThreadLimit() async throws {
        try await withServer({ configuration in
            attestConfiguration(attester, mode: .optional)(&configuration)
            configuration.quotas.threadsPerAddress = QuotaLimit(1, per: .seconds(3600))
        }) { (server: Harness) async throws in
            let first = AttestedDevice(attester)
            let second = AttestedDevice(attester)
            let firstToken = try #require(try await first.attest(server).json["token"]?.stringValue)
            let secondToken = try #require(try await second.attest(server).json["token"]?.stringValue)
            #expect(try await first.send(server, token: firstToken, "hello").status == .created)
            let refused = try await second.send(server, token: secondToken, "hello")
            #expect(refused.status == .tooManyRequests)
            #expect(refused.json["error"]?["message"]?.stringValue?.contains("new threads per address") == true)
            #expect(server.emulator.threads().count == 1)
        }
    }

    /// Tokens from before attestation was required name no device: refused on every user route
    /// with the code the SDK answers by attesting.
    @Test func requiredRefusesTokensIssuedWithoutAttestation() async throws {
        let store = "sqlite://\(temporaryStorePath())"
        let box = Mutex<String?>(nil)
        try await withServer(store: store, attestConfiguration(attester, mode: .optional)) { (server: Harness) async throws in
            let token = try await server.session().token
            box.withLock { $0 = token }
        }
        let token = try #require(box.withLock { $0 })
        try await withServer(store: store, attestConfiguration(attester, mode: .required)) { (server: Harness) async throws in
            for (method, path) in [(HTTPRequest.Method.get, "/v1/messages"), (.get, "/v1/unread")] {
                let reply = try await server.request(method, path, token: token)
                #expect(reply.status == .unauthorized, "\(path)")
                #expect(reply.errorCode == "attestation_required", "\(path)")
            }
            #expect(try await server.metric(#"threaddesk_app_attest_total{step="token",outcome="attestation_required"}"#) == 2)
            // Still the user's: it can be ended (the SDK does, once it attested a new key).
            #expect(try await server.request(.delete, "/v1/session", token: token).status == .noContent)
            #expect(try await server.store.user(forTokenHash: UserToken.hash(token)) == nil)
        }
    }

    /// Discord deleted the thread: the next message would make a new one, which needs an
    /// assertion like the first; refused before Discord is asked to make it.
    @Test func aThreadMadeAnewNeedsAnAssertion() async throws {
        try await withServer(attestConfiguration(attester, mode: .optional)) { (server: Harness) async throws in
            let device = AttestedDevice(attester)
            let opened = try await device.attest(server)
            let token = try #require(opened.json["token"]?.stringValue)
            let user = try #require(opened.json["userId"]?.stringValue)
            #expect(try await device.send(server, token: token, "hello").status == .created)
            let old = try #require(try await server.thread(of: user))
            try server.emulator.deleteThread(old)
            let threadsMade = server.emulator.counters.requests("POST", "/channels/{channel_id}/threads")
            // Accepted (the server does not know yet that the thread is gone); its delivery finds
            // the thread gone and makes no new one for an unsigned send: failed, saying why.
            let unsigned = try await server.send("are you there?", token: token)
            #expect(unsigned.status == .created)
            #expect(server.emulator.counters.requests("POST", "/channels/{channel_id}/threads") == threadsMade)
            let failed = try #require(try await server.messages(token: token).first { $0["id"] == unsigned.json["id"] })
            #expect(failed["delivery"] == "failed" && failed["deliveryError"]?["code"] == "assertion_required")
            #expect(try await device.send(server, token: token, "are you there?").status == .created)
            let new = try #require(try await server.thread(of: user))
            #expect(new != old)
        }
    }

    /// A key stays tied to the root that attested it and its environment, checked on every
    /// assertion: with the extra root gone (or development no longer accepted) it stops working.
    @Test func aKeyAttestedByARootNoLongerTrustedStopsWorking() async throws {
        let store = "sqlite://\(temporaryStorePath())"
        let device = AttestedDevice(attester)
        let box = Mutex<String?>(nil)
        try await withServer(store: store, attestConfiguration(attester, mode: .optional)) { (server: Harness) async throws in
            let token = try await device.attest(server).json["token"]?.stringValue
            box.withLock { $0 = token }
            #expect(try await server.store.deviceKey(device.deviceID)?.root.hasPrefix("sha256:") == true)
        }
        let token = try #require(box.withLock { $0 })
        try await withServer(store: store, { configuration in
            attestConfiguration(attester, mode: .optional)(&configuration)
            configuration.attest.extraRootPEM = nil
        }) { (server: Harness) async throws in
            #expect(try await device.send(server, token: token, "hello").errorCode == "attestation_required")
        }
        try await withServer(store: store, { configuration in
            attestConfiguration(attester, mode: .optional)(&configuration)
            configuration.attest.environments = [.production]
        }) { (server: Harness) async throws in
            #expect(try await device.send(server, token: token, "hello").errorCode == "attestation_required")
        }
        // Where both are still accepted, the key works.
        try await withServer(store: store, attestConfiguration(attester, mode: .optional)) { (server: Harness) async throws in
            #expect(try await device.send(server, token: token, "hello").status == .created)
        }
    }

    /// A kept key the store cannot use is the server's fault (5xx), not the client's malformed
    /// assertion.
    @Test func aCorruptStoredKeyIsTheServersFault() async throws {
        try await withServer(attestConfiguration(attester, mode: .optional)) { (server: Harness) async throws in
            let device = AttestedDevice(attester)
            let root = try #require(AppAttestVerifier.rootName(pem: attester.rootCertificatePEM))
            #expect(try await server.store.addDeviceKey(
                DeviceKey(keyID: device.deviceID, publicKey: [4, 1, 2, 3], environment: "development", root: root, attestedAt: Date()),
                forgettingKeysUnusedSince: nil))
            var headers = AttestedDevice.appKey
            headers[.init(AppAttestAssertion.headerName)!] = try await device.assertion(
                server, method: "POST", path: "/v1/session", body: Data("{}".utf8))
            let reply = try await server.request(.post, "/v1/session", headers: headers, json: "{}")
            #expect(reply.status.code >= 500)
            #expect(reply.errorCode != "assertion_malformed")
        }
    }

    /// An attested upload is checked before its body is read: without an assertion it is refused
    /// as such, not read up to the limit first.
    @Test func anAttestedUploadIsCheckedBeforeItsBodyIsRead() async throws {
        try await withServer({ configuration in
            attestConfiguration(attester, mode: .optional)(&configuration)
            configuration.attachments.maxTotalBytes = 64 * 1024
        }) { (server: Harness) async throws in
            let device = AttestedDevice(attester)
            let token = try #require(try await device.attest(server).json["token"]?.stringValue)
            // Over the limit (files plus 1 MiB of framing): read first, it would be 413.
            let body = Data(repeating: UInt8(ascii: "a"), count: 64 * 1024 + 1024 * 1024 + 1)
            let reply = try await server.request(
                .post, "/v1/messages", token: token, headers: [.init("Idempotency-Key")!: UUID().uuidString], raw: body,
                contentType: "multipart/form-data; boundary=x")
            #expect(reply.errorCode == "assertion_required")
            #expect(server.discordRequests == 0)
        }
    }
}

/// The memory of devices whose use a process noted: once a period each, and bounded.
@Suite("Device sightings") struct DeviceSightingsTests {
    @Test func eachDeviceIsDueOncePerPeriodAndTheMemoryStaysBounded() {
        let sightings = DeviceSightings(capacity: 4)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for device in ["a", "b", "c", "d"] { #expect(sightings.due(device, now: start, every: 10)) }
        #expect(!sightings.due("a", now: start.addingTimeInterval(9), every: 10))
        #expect(sightings.due("a", now: start.addingTimeInterval(10), every: 10))
        // Full: a new device makes room by the oldest half, the recently noted stay.
        #expect(sightings.due("e", now: start.addingTimeInterval(11), every: 10))
        #expect(sightings.count <= 4)
        #expect(!sightings.due("a", now: start.addingTimeInterval(12), every: 10))
        #expect(!sightings.due("e", now: start.addingTimeInterval(12), every: 10))
        #expect(sightings.count == 2)
        // Long after, full again: whoever was noted a period ago goes first.
        for device in ["f", "g", "h"] { #expect(sightings.due(device, now: start.addingTimeInterval(100), every: 10)) }
        #expect(sightings.count == 3)
        #expect(sightings.due("a", now: start.addingTimeInterval(100), every: 10), "forgotten, so due again")
        // A note the store did not take is tried again at the next request.
        sightings.forget("f")
        #expect(sightings.due("f", now: start.addingTimeInterval(101), every: 10))
    }
}

