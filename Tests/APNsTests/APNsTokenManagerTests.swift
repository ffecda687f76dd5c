import APNs
import Crypto
import Foundation
import Testing
import TestSupport

@Suite("Provider token manager, on a manual clock")
struct APNsTokenManagerTests {
    let key = P256.Signing.PrivateKey()

    @Test func oneTokenIsSharedUntilItIsFiftyMinutesOld() async throws {
        let clock = ManualClock()
        let manager = try APNsTokenManager(keyID: "KEY", teamID: "TEAM", privateKeyPEM: key.pemRepresentation, clock: clock)
        let first = try await manager.token()
        clock.advance(by: .seconds(49 * 60))
        #expect(try await manager.token() == first)
        clock.advance(by: .seconds(60))
        let second = try await manager.token()
        #expect(second != first)
        // After a rejection only the rejected token is replaced, and only once.
        let third = try await manager.renew(rejected: second)
        #expect(third != second)
        #expect(try await manager.renew(rejected: second) == third)
    }

    @Test func concurrentSendersShareOneRenewal() async throws {
        let clock = ManualClock()
        let manager = try APNsTokenManager(keyID: "KEY", teamID: "TEAM", privateKeyPEM: key.pemRepresentation, clock: clock)
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 { group.addTask { try await manager.token() } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
    }

    @Test func theTokenIsAnES256JWTWithKidIssAndIat() async throws {
        let issued = Date(timeIntervalSince1970: 1_800_000_000)
        let manager = try APNsTokenManager(
            keyID: "ABC123DEFG", teamID: "DEF123GHIJ", privateKeyPEM: key.pemRepresentation, clock: ManualClock(), wallClock: { issued })
        let parts = try await manager.token().split(separator: ".")
        #expect(parts.count == 3)
        let header = try JSONSerialization.jsonObject(with: try #require(Base64URL.decode(parts[0]))) as? [String: String]
        #expect(header == ["alg": "ES256", "kid": "ABC123DEFG"])
        let claims = try JSONSerialization.jsonObject(with: try #require(Base64URL.decode(parts[1]))) as? [String: Any]
        #expect(claims?["iss"] as? String == "DEF123GHIJ")
        #expect(claims?["iat"] as? Int == 1_800_000_000)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64URL.decode(parts[2])))
        #expect(key.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))
    }
}
