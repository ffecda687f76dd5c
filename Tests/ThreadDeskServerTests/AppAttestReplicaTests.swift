import AsyncHTTPClient
import Crypto
import DiscordEmulator
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SoftwareAttester
import Testing
import TestSupport
import ThreadDeskServer
import ThreadDeskWire

/// Challenges and counters live in PostgreSQL: what one replica issued or accepted, the other knows.
@Suite("App Attest across replicas", .enabled(if: postgresIsAvailable), .timeLimit(.minutes(2)))
struct AppAttestReplicaTests {
    typealias Client = ReplicaTests.Client

    @Test func twoReplicasShareChallengesAndCounters() async throws {
        let attester = try SoftwareAttester()
        let key = attester.generateKey()
        let appKey: HTTPFields = [.init("X-App-Key")!: "app"]
        try await withFreshPostgresSchema { url in
            try await DiscordEmulator.withRunning(configuration: .fastWindows(scale: 0.02), logger: testLogger()) { discord in
                let endpoints = await discord.endpoints()
                var configuration = ServerConfiguration(
                    discordToken: endpoints.botToken, discordAPIURL: endpoints.restURL, guildID: endpoints.guildID,
                    forumChannelID: endpoints.forumChannelID, appKey: "app")
                configuration.port = 0
                configuration.storeURL = url
                configuration.quotas = .off
                attestConfiguration(attester, mode: .required)(&configuration)
                let replicaA = buildApplication(configuration: configuration, store: try makeStore(url: url, logger: testLogger()), logger: testLogger())
                let replicaB = buildApplication(configuration: configuration, store: try makeStore(url: url, logger: testLogger()), logger: testLogger())
                try await withOwnHTTPClient(HTTPClient.Configuration(timeout: .init(connect: .seconds(5), read: .seconds(60)))) { http in
                    try await replicaA.test(.live) { a in
                        try await replicaB.test(.live) { b in
                            let a = Client(port: try #require(a.port), http: http)
                            let b = Client(port: try #require(b.port), http: http)
                            func challenge(_ replica: Client) async throws -> String {
                                let reply = try await replica.call(.post, "/v1/attest/challenge", headers: appKey)
                                return try #require(try JSON.parse(reply.body)["challenge"]?.stringValue)
                            }
                            func attest(_ replica: Client, _ challenge: String) async throws -> (HTTPResponse.Status, JSON) {
                                let object = try attester.attest(key, clientDataHash: Array(SHA256.hash(data: Data(challenge.utf8))))
                                let body = SessionRequest(attestation: AttestationPayload(
                                    keyId: key.idBase64, attestationObject: Data(object).base64EncodedString(), challenge: challenge))
                                let reply = try await replica.call(
                                    .post, "/v1/session", headers: appKey, json: String(decoding: try JSONEncoder().encode(body), as: UTF8.self))
                                return (reply.status, try JSON.parse(reply.body))
                            }
                            // Issued by A, used on B, reused on A.
                            let issued = try await challenge(a)
                            let (status, opened) = try await attest(b, issued)
                            #expect(status == .created)
                            let token = try #require(opened["token"]?.stringValue)
                            #expect(try await attest(a, issued).1["error"]?["code"]?.stringValue == "challenge_used")
                            // A signed request on A (counter 1); the same counter on B is a replay.
                            func diagnostics(_ replica: Client, counter: UInt32) async throws -> (HTTPResponse.Status, String?) {
                                let nonce = try await challenge(replica == a ? b : a)
                                let clientData = AppAttestAssertion.clientData(
                                    method: "POST", path: "/v1/diagnostics", challenge: nonce, body: Array("{}".utf8))
                                let assertion = try attester.assert(key, clientDataHash: Array(SHA256.hash(data: clientData)), counter: counter)
                                var headers: HTTPFields = [.authorization: "Bearer \(token)"]
                                headers[.init(AppAttestAssertion.headerName)!] = AppAttestAssertion.header(
                                    keyId: key.idBase64, challenge: nonce, assertion: Data(assertion).base64EncodedString())
                                let reply = try await replica.call(.post, "/v1/diagnostics", headers: headers, json: "{}")
                                return (reply.status, try? JSON.parse(reply.body)["error"]?["code"]?.stringValue)
                            }
                            #expect(try await diagnostics(a, counter: 1).0 == .created)
                            #expect(try await diagnostics(b, counter: 1).1 == "assertion_replayed")
                            #expect(try await diagnostics(b, counter: 2).0 == .created)
                            #expect(try await diagnostics(a, counter: 2).1 == "assertion_replayed")
                        }
                    }
                }
            }
        }
    }
}

extension ReplicaTests.Client: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool { lhs.base == rhs.base }
}
