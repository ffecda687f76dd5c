import Crypto
import Foundation
import GRDB
import Synchronization
import SoftwareAttester
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskKit
import ThreadDeskServer
import ThreadDeskStore

/// The software attester as the SDK's provider: the Secure Enclave's three calls, in process.
struct InProcessAttestProvider: AppAttestProvider {
    let attester: SoftwareAttester
    let keys = KeyRing()

    final class KeyRing: Sendable {
        let keys = Mutex<[String: SoftwareAttester.Key]>([:])
    }

    func generateKey() async throws -> String {
        let key = attester.generateKey()
        keys.keys.withLock { $0[key.idBase64] = key }
        return key.idBase64
    }

    func attestKey(_ keyID: String, clientData: Data) async throws -> Data {
        Data(try attester.attest(try key(keyID), clientDataHash: Array(SHA256.hash(data: clientData))))
    }

    func generateAssertion(_ keyID: String, clientData: Data) async throws -> Data {
        Data(try attester.assert(try key(keyID), clientDataHash: Array(SHA256.hash(data: clientData))))
    }

    /// The Secure Enclave's `invalidKey`: this device has no such key.
    struct KeyLost: Error {}

    func isKeyLost(_ error: any Error) -> Bool { error is KeyLost }

    private func key(_ id: String) throws -> SoftwareAttester.Key {
        guard let key = keys.keys.withLock({ $0[id] }) else { throw KeyLost() }
        return key
    }
}

/// A server that serves attested devices only, trusting `attester`'s root.
func requiringAttestation(by attester: SoftwareAttester) -> @Sendable (inout ServerConfiguration) -> Void {
    { configuration in
        configuration.attest.mode = .required
        configuration.attest.teamID = attester.teamID
        configuration.attest.bundleIDs = [attester.bundleID]
        configuration.attest.extraRootPEM = attester.rootCertificatePEM
    }
}

/// With `APP_ATTEST=required`, the SDK attests when it opens a session and signs what needs it.
@Suite("ThreadDeskKit with App Attest", .timeLimit(.minutes(2)))
struct SDKAttestTests {
    @Test func anAttestedClientOpensSendsUploadsAndRenews() async throws {
        let attester = try SoftwareAttester()
        try await withSDKServer(requiringAttestation(by: attester)) { server in
            // Without a provider: refused, with the code that says why.
            await #expect { try await server.client(device: "plain").open() } throws: { error in
                (error as? ThreadDeskError)?.code == .attestationRequired
            }
            let provider = InProcessAttestProvider(attester: attester)
            let client = server.client { $0.appAttest = provider }
            let session = try await client.open()
            #expect(session.token.contains("."))
            // The first message needs an assertion: the client adds one when asked.
            #expect(try await client.send("Hello, genuinely").content == "Hello, genuinely")
            _ = try await server.thread(of: client)
            #expect(try await client.send("Again").content == "Again")
            #expect(try await client.uploadDiagnostics(["battery": 80]).size > 0)
            // A renewal is signed by the session's key: the same user, on the same device.
            let renewed = try await client.renewSession()
            #expect(renewed.userId == session.userId && renewed.token != session.token)
            #expect(renewed.token.split(separator: ".").last == session.token.split(separator: ".").last)
        }
    }

    /// A device that lost its key before its first message (restored onto another device): the
    /// message, which needs an assertion, goes out under a new session with a newly attested key.
    @Test func aFirstMessageAfterTheKeyWasLostAttestsANewOne() async throws {
        let attester = try SoftwareAttester()
        try await withSDKServer(requiringAttestation(by: attester)) { server in
            let provider = InProcessAttestProvider(attester: attester)
            let client = server.client { $0.appAttest = provider }
            _ = try await client.open()
            provider.keys.keys.withLock { $0.removeAll() }
            #expect(try await client.send("Hello from the restored phone").content == "Hello from the restored phone")
            #expect(try await client.messages().messages.map(\.content) == ["Hello from the restored phone"])
            #expect(provider.keys.keys.withLock { $0.count } == 1, "one new key, attested once")
        }
    }

    /// A kept key that no longer works, on either side, is replaced by a new attested one: the
    /// app restored onto another device (Apple's keys do not follow it), or the server's store
    /// restored from before the key was attested. The user and their conversation stay.
    @Test func aKeyLostOnTheDeviceOrOnTheServerIsAttestedAnew() async throws {
        let attester = try SoftwareAttester()
        try await withSDKServer(requiringAttestation(by: attester)) { server in
            let provider = InProcessAttestProvider(attester: attester)
            let client = server.client { $0.appAttest = provider }
            let session = try await client.open()
            #expect(try await client.send("before").content == "before")
            let device = { (token: String) in token.split(separator: ".").last.map(String.init) }

            // The device lost its key: a new one is attested for the renewal.
            provider.keys.keys.withLock { $0.removeAll() }
            let onNewDevice = try await client.renewSession()
            #expect(onNewDevice.userId == session.userId)
            #expect(device(onNewDevice.token) != device(session.token))

            // The server lost the key (its database restored from before): refused as unknown,
            // then attested anew.
            let database = try openLiveSQLite(server.folder.appendingPathComponent("db.sqlite").path)
            let forgotten = try await database.write { db in
                try db.execute(sql: "DELETE FROM attest_keys")
                return db.changesCount
            }
            #expect(forgotten >= 1)
            try database.close()
            let afterRestore = try await client.renewSession()
            #expect(afterRestore.userId == session.userId)
            #expect(device(afterRestore.token) != device(onNewDevice.token))
            // Signed by the new key, the conversation goes on.
            #expect(try await client.send("after").content == "after")
            #expect(try await client.messages().messages.map(\.content).suffix(2) == ["before", "after"])
        }
    }

    /// The server forgot the session's key (unused for `APP_ATTEST_FORGET_DAYS`, or its store
    /// restored from before it) while the app kept its session: the next signed calls — two at
    /// once here — share one new session with one newly attested key and go through; the old
    /// token is ended; nothing is dropped from the outbox.
    @Test func aKeyTheServerForgotIsAttestedAnewOnTheNextSignedCall() async throws {
        let attester = try SoftwareAttester()
        try await withSDKServer(requiringAttestation(by: attester)) { server in
            let provider = InProcessAttestProvider(attester: attester)
            let client = server.client { $0.appAttest = provider }
            let session = try await client.open()
            #expect(try await client.send("before").content == "before")
            let database = try openLiveSQLite(server.folder.appendingPathComponent("db.sqlite").path)
            try await database.write { db in try db.execute(sql: "DELETE FROM attest_keys") }
            async let first = client.uploadDiagnostics(["battery": 80])
            async let second = client.uploadDiagnostics(["battery": 79])
            let (one, two) = try await (first, second)
            #expect(one.size > 0 && two.size > 0)
            // One new key, attested for the same user; the token of the forgotten key ended.
            #expect(try await database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM attest_keys") } == 1)
            try database.close()
            #expect(await client.userID == session.userId)
            #expect(try await server.store.user(forTokenHash: UserToken.hash(session.token)) == nil)
            #expect(try await client.send("after").content == "after")
            #expect(try await client.pendingMessages().isEmpty)
            #expect(try await client.messages().messages.map(\.content) == ["before", "after"])
        }
    }

    /// Signed requests sent at once reach the server in any order: one whose counter a later one
    /// overtook reads as replayed, and is signed anew and sent again.
    @Test func aSignedRequestOvertakenByALaterOneIsSignedAnew() async throws {
        let attester = try SoftwareAttester()
        try await withSDKServer(requiringAttestation(by: attester)) { server in
            let provider = InProcessAttestProvider(attester: attester)
            let client = server.client { $0.appAttest = provider }
            _ = try await client.open()
            #expect(try await client.uploadDiagnostics(["battery": 80]).size > 0)
            // Before each signed call: another signed request of this device's got there first
            // with the next counter.
            let database = try openLiveSQLite(server.folder.appendingPathComponent("db.sqlite").path)
            let overtake = { try await database.write { db in try db.execute(sql: "UPDATE attest_keys SET counter = counter + 1") } }
            try await overtake()
            #expect(try await client.uploadDiagnostics(["battery": 79]).size > 0)
            try await overtake()
            let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(repeating: 0, count: 64)
            let sent = try await client.send("with a file", files: [OutgoingFile(filename: "shot.png", contentType: "image/png", data: png)])
            #expect(sent.content == "with a file" && sent.attachments.count == 1)
            try database.close()
        }
    }

    /// What a copied token alone may no longer do, the SDK signs: the push token, the export,
    /// the erasure, and signing out everywhere (which ends every session of the user).
    @Test func theCallsThatNeedTheDevicesAssertionAreSigned() async throws {
        let attester = try SoftwareAttester()
        try await withSDKServer(requiringAttestation(by: attester)) { server in
            let provider = InProcessAttestProvider(attester: attester)
            let client = server.client { $0.appAttest = provider }
            let session = try await client.open()
            let id = try requireValue(UserID(session.userId), "no user")
            try await client.registerPushToken(Data(repeating: 0xAB, count: 32), environment: .development)
            #expect(try await server.store.user(id)?.pushToken != nil)
            try await client.unregisterPushToken()
            #expect(try await server.store.user(id)?.pushToken == nil)
            #expect(try await client.send("hello").content == "hello")
            // Delivered (its thread made) before the erasure, which then locks that thread.
            try await server.settled()
            #expect(try await client.exportMyData().messages.map(\.content) == ["hello"])
            try await client.deleteMyData()
            #expect(try await server.store.user(id) == nil)

            // Two devices of one user; one signs out everywhere: both tokens end.
            let phone = server.client(device: "phone") { $0.appAttest = provider }
            let first = try await phone.open()
            #expect(try await phone.send("from the phone").content == "from the phone")
            try await client.signOutEverywhere()
            try await phone.signOutEverywhere()
            #expect(await phone.userID == nil)
            #expect(try await server.store.user(forTokenHash: UserToken.hash(first.token)) == nil)
        }
    }
}
