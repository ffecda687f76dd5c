import Foundation
import GRDB
import PostgresNIO
import Testing
import TestSupport
@testable import ThreadDeskStore

/// App Attest's challenges and device keys: each check-and-change happens once, whoever races.
@Suite("DeviceAttestations contract")
struct DeviceAttestationsContract {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test(arguments: StoreKind.available)
    func aChallengeIsUsedOnceBeforeItExpires(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.addChallenge("a", expires: start.addingTimeInterval(300), now: start)
            try await store.addChallenge("b", expires: start.addingTimeInterval(300), now: start)
            #expect(try await store.useChallenge("a", now: start) == .accepted)
            #expect(try await store.useChallenge("a", now: start) == .used)
            #expect(try await store.useChallenge("b", now: start.addingTimeInterval(300)) == .expired)
            #expect(try await store.useChallenge("never", now: start) == .unknown)
            // Many at once: exactly one wins.
            try await store.addChallenge("c", expires: start.addingTimeInterval(300), now: start)
            let outcomes = try await withThrowingTaskGroup(of: ChallengeUse.self) { group in
                for _ in 0..<8 { group.addTask { try await store.useChallenge("c", now: self.start) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == .accepted }.count == 1)
            #expect(outcomes.filter { $0 == .used }.count == 7)
        }
    }

    @Test(arguments: StoreKind.available)
    func challengesLongExpiredAreForgotten(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            // Deleted a minute after they expire, not kept for a day: the table holds minutes' worth.
            try await store.addChallenge("old", expires: start, now: start.addingTimeInterval(-300))
            try await store.addChallenge("recent", expires: start.addingTimeInterval(30), now: start.addingTimeInterval(-270))
            let later = start.addingTimeInterval(forgottenChallengeAge + 1)
            try await store.addChallenge("new", expires: later.addingTimeInterval(300), now: later)
            #expect(try await store.useChallenge("old", now: later) == .unknown)
            #expect(try await store.useChallenge("recent", now: later) == .expired)
            #expect(forgottenChallengeAge <= 300)
        }
    }

    @Test(arguments: StoreKind.available)
    func aKeyIsAttestedOnceAndItsCounterOnlyRises(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let key = DeviceKey(keyID: "k1", publicKey: [4, 1, 2, 3], environment: "development", root: "apple", attestedAt: start)
            #expect(try await store.deviceKey("k1") == nil)
            #expect(try await store.addDeviceKey(key, forgettingKeysUnusedSince: nil))
            let again = DeviceKey(keyID: "k1", publicKey: [9], environment: "production", root: "apple", attestedAt: start)
            #expect(try await store.addDeviceKey(again, forgettingKeysUnusedSince: nil) == false)
            #expect(try await store.deviceKey("k1") == key)
            #expect(try await store.deviceKey("k1")?.usedAt == start)
            let later = start.addingTimeInterval(60)
            #expect(try await store.advanceCounter(of: "k1", to: 3, now: later))
            #expect(try await store.advanceCounter(of: "k1", to: 3, now: later) == false)
            #expect(try await store.advanceCounter(of: "k1", to: 2, now: later) == false)
            #expect(try await store.advanceCounter(of: "nobody", to: 9, now: later) == false)
            #expect(try await store.deviceKey("k1")?.counter == 3)
            #expect(try await store.deviceKey("k1")?.usedAt == later)
            let raced = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 { group.addTask { try await store.advanceCounter(of: "k1", to: 4, now: later) } }
                return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(raced == 1)
            #expect(try await store.deviceKey("k1")?.counter == 4)
        }
    }

    /// Keys unused for long are forgotten as new ones are attested, a bounded number at a time;
    /// a key in use (an accepted assertion) is kept however long ago it was attested.
    @Test(arguments: StoreKind.available)
    func keysUnusedForLongAreForgottenAFewAtATime(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            func key(_ id: String, at time: Date) -> DeviceKey {
                DeviceKey(keyID: id, publicKey: [4, 1], environment: "production", root: "apple", attestedAt: time)
            }
            let stale = forgottenKeysPerAttestation + 5
            for index in 0..<stale { #expect(try await store.addDeviceKey(key("old\(index)", at: start), forgettingKeysUnusedSince: nil)) }
            #expect(try await store.addDeviceKey(key("used", at: start), forgettingKeysUnusedSince: nil))
            let recently = start.addingTimeInterval(200 * 86_400)
            #expect(try await store.advanceCounter(of: "used", to: 1, now: recently))
            // A year on, keys unused for 180 days make room: a batch at each new attestation.
            let year = start.addingTimeInterval(365 * 86_400)
            let cutoff = year.addingTimeInterval(-180 * 86_400)
            #expect(try await store.addDeviceKey(key("new1", at: year), forgettingKeysUnusedSince: cutoff))
            var left = 0
            for index in 0..<stale where try await store.deviceKey("old\(index)") != nil { left += 1 }
            #expect(left == stale - forgottenKeysPerAttestation)
            #expect(try await store.addDeviceKey(key("new2", at: year), forgettingKeysUnusedSince: cutoff))
            for index in 0..<stale { #expect(try await store.deviceKey("old\(index)") == nil) }
            // Used within the window, or new: kept.
            #expect(try await store.deviceKey("new1") != nil)
            #expect(try await store.deviceKey("new2") != nil)
            let used = try #require(try await store.deviceKey("used"))
            #expect(used.counter == 1 && used.usedAt == recently)
            // A forgotten key may be attested anew.
            #expect(try await store.addDeviceKey(key("old0", at: year), forgettingKeysUnusedSince: cutoff))
        }
    }

    /// A session served notes its key's use, at most once a period: an older note is moved on,
    /// a recent one left.
    @Test(arguments: StoreKind.available)
    func aKeysUseIsNotedOnlyOverAnOlderNote(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            #expect(try await store.addDeviceKey(
                DeviceKey(keyID: "k", publicKey: [4, 1], environment: "production", root: "apple", attestedAt: start),
                forgettingKeysUnusedSince: nil))
            try await store.noteDeviceKeyUsed("k", now: start.addingTimeInterval(10), unlessSince: start.addingTimeInterval(5))
            #expect(try await store.deviceKey("k")?.usedAt == start.addingTimeInterval(10))
            try await store.noteDeviceKeyUsed("k", now: start.addingTimeInterval(12), unlessSince: start.addingTimeInterval(5))
            #expect(try await store.deviceKey("k")?.usedAt == start.addingTimeInterval(10))
            try await store.noteDeviceKeyUsed("nobody", now: start, unlessSince: start)
            #expect(try await store.deviceKey("nobody") == nil)
        }
    }

    /// A key kept before last use was noted counts as used when it was attested, so an upgrade
    /// forgets nobody at once that attested recently.
    @Test func anUpgradedSQLiteStoreNotesKeptKeysAsUsedWhenAttested() async throws {
        let path = temporaryDatabasePath()
        try FileManager.default.createDirectory(at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteStore.migrator.migrate(queue, upTo: "v7: the root of each attested key")
            try await queue.write { db in
                try db.execute(
                    sql: "INSERT INTO attest_keys (key_id, public_key, counter, environment, attested_at, root) VALUES ('k', 'BAE=', 2, 'production', ?, 'apple')",
                    arguments: [start.timeIntervalSince1970])
            }
        }
        let store = try SQLiteStore(path: path)
        let key = try #require(try await store.deviceKey("k"))
        #expect(key.usedAt == start && key.attestedAt == start && key.counter == 2)
    }

    /// The same on PostgreSQL, whose replicas of the version before (which write no `used_at`)
    /// keep attesting while the others are replaced.
    @Test(.enabled(if: postgresIsAvailable))
    func anUpgradedPostgreSQLStoreNotesKeptKeysAsUsedWhenAttested() async throws {
        try await withFreshPostgresSchema { url in
            try await PostgresStore.withRunning(url: url) { store in
                #expect(try await store.addDeviceKey(
                    DeviceKey(keyID: "k", publicKey: [4, 1], counter: 2, environment: "production", root: "apple", attestedAt: start),
                    forgettingKeysUnusedSince: nil))
                // The database as schema 8 left it.
                try await store.client.query("ALTER TABLE attest_keys DROP COLUMN used_at")
                try await store.client.query("UPDATE schema_version SET version = 8")
                try await store.migrate()
                let key = try #require(try await store.deviceKey("k"))
                #expect(key.usedAt == start && key.attestedAt == start && key.counter == 2)
                // What a replica of schema 8 writes.
                try await store.client.query(
                    "INSERT INTO attest_keys (key_id, public_key, counter, environment, root, attested_at) VALUES ('old', 'BAE=', 0, 'production', 'apple', \(start))")
                #expect(try await store.deviceKey("old") != nil)
            }
        }
    }
}
