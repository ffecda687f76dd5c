import AppAttest
import DiscordREST
import Foundation
import HTTPTypes
import SoftwareAttester
import Synchronization
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore
import ThreadDeskWire

/// A token copied off a device (a backup, a log, a proxy) is not the device: what would hurt the
/// user takes the device's assertion, and a token is only as good as its key.
@Suite("App Attest: a stolen token") struct AttestTokenTests {
    let attester: SoftwareAttester

    init() throws { attester = try SoftwareAttester() }

    static let pushBody = #"{"token":"\#(String(repeating: "cd", count: 32))","environment":"development"}"#

    /// Erasing or exporting the conversation and setting or removing the push token need the
    /// device's assertion; with it, each is served.
    @Test func aCopiedTokenAloneNeitherErasesNorExportsNorTakesPushes() async throws {
        try await withServer(attestConfiguration(attester, mode: .required)) { server in
            let device = AttestedDevice(attester)
            let opened = try await device.attest(server)
            let token = try #require(opened.json["token"]?.stringValue)
            let user = try #require(opened.json["userId"]?.stringValue.flatMap { UserID($0) })
            #expect(try await device.send(server, token: token, "hello").status == .created)
            let routes: [(HTTPRequest.Method, String, String?)] = [
                (.put, "/v1/push-token", Self.pushBody), (.delete, "/v1/push-token", nil), (.get, "/v1/me/export", nil),
                (.delete, "/v1/me", nil),
            ]
            for (method, path, body) in routes + [(.delete, "/v1/sessions", nil)] {
                let reply = try await server.request(method, path, token: token, json: body)
                #expect(reply.status == .unauthorized, "\(method) \(path)")
                #expect(reply.errorCode == "assertion_required", "\(method) \(path)")
            }
            #expect(try await server.store.user(user)?.pushToken == nil)
            #expect(try await server.store.user(user)?.threadID != nil)

            func signed(_ method: HTTPRequest.Method, _ path: String, _ body: String?, by device: AttestedDevice, token: String) async throws {
                let header = try await device.assertion(server, method: method.rawValue, path: path, body: Data((body ?? "").utf8))
                let reply = try await server.request(
                    method, path, token: token, headers: [.init(AppAttestAssertion.headerName)!: header], json: body)
                #expect((200..<300).contains(reply.status.code), "\(method) \(path): \(String(decoding: reply.body, as: UTF8.self))")
            }
            for (method, path, body) in routes { try await signed(method, path, body, by: device, token: token) }
            #expect(try await server.store.user(user) == nil, "erased")
            // Signing out everywhere, signed: the token ends.
            let other = AttestedDevice(attester)
            let otherToken = try #require(try await other.attest(server).json["token"]?.stringValue)
            try await signed(.delete, "/v1/sessions", nil, by: other, token: otherToken)
            #expect(try await server.request(.get, "/v1/messages", token: otherToken).status == .unauthorized)
        }
    }

    /// A key forgotten (as after `APP_ATTEST_FORGET_DAYS` unused) stops its tokens on routes that
    /// ask no assertion too: believed trusted for a minute at most, on the server's clock.
    @Test func aTokenWhoseKeyWasForgottenStopsWithinAMinute() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock), attestConfiguration(attester, mode: .required)) { server in
            let device = AttestedDevice(attester)
            let token = try #require(try await device.attest(server).json["token"]?.stringValue)
            #expect(try await server.request(.get, "/v1/messages", token: token).status == .ok)
            // Another key's attestation makes room by every key unused since (here: all of them).
            #expect(try await server.store.addDeviceKey(
                DeviceKey(keyID: "another-device", publicKey: [4], environment: "development", root: "apple", attestedAt: Date()),
                forgettingKeysUnusedSince: .distantFuture))
            #expect(try await server.store.deviceKey(device.deviceID) == nil)
            clock.advance(by: .seconds(30))
            #expect(try await server.request(.get, "/v1/messages", token: token).status == .ok, "believed for a minute")
            clock.advance(by: .seconds(31))
            let refused = try await server.request(.get, "/v1/messages", token: token)
            #expect(refused.status == .unauthorized)
            #expect(refused.errorCode == "assertion_unknown_key")
            #expect(try await server.metric(#"threaddesk_app_attest_total{step="token",outcome="assertion_unknown_key"}"#) == 1)
        }
    }

    /// A key attested in an environment the server no longer accepts stops its tokens on every
    /// route, not only on those that ask an assertion.
    @Test func aTokenWhoseKeyIsNoLongerTrustedStops() async throws {
        let store = "sqlite://\(temporaryStorePath())"
        let box = Mutex<String?>(nil)
        try await withServer(store: store, attestConfiguration(attester, mode: .required)) { server in
            let token = try await AttestedDevice(attester).attest(server).json["token"]?.stringValue
            box.withLock { $0 = token }
        }
        let token = try #require(box.withLock { $0 })
        try await withServer(store: store, { configuration in
            attestConfiguration(attester, mode: .required)(&configuration)
            configuration.attest.environments = [.production]
        }) { server in
            for path in ["/v1/messages", "/v1/unread"] {
                let reply = try await server.request(.get, path, token: token)
                #expect(reply.status == .unauthorized, "\(path)")
                #expect(reply.errorCode == "attestation_required", "\(path)")
            }
            #expect(try await server.metric(#"threaddesk_app_attest_total{step="token",outcome="key_untrusted"}"#) == 2)
        }
    }
}
