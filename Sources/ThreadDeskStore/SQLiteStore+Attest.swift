import Foundation
import GRDB

extension SQLiteStore {
    static func migrateAttestations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v6: app attest") { db in
            try db.execute(
                sql: """
                    CREATE TABLE attest_challenges (hash TEXT PRIMARY KEY, expires_at DOUBLE NOT NULL, used INTEGER NOT NULL);
                    CREATE INDEX attest_challenges_expiry ON attest_challenges (expires_at);
                    CREATE TABLE attest_keys (
                        key_id TEXT PRIMARY KEY, public_key TEXT NOT NULL, counter INTEGER NOT NULL, environment TEXT NOT NULL,
                        attested_at DOUBLE NOT NULL);
                    """)
        }
        migrator.registerMigration("v7: the root of each attested key") { db in
            // Keys kept before have none: they attest anew.
            try db.execute(sql: "ALTER TABLE attest_keys ADD COLUMN root TEXT NOT NULL DEFAULT ''")
        }
        migrator.registerMigration("v8: when each attested key was last used") { db in
            try db.execute(
                sql: """
                    ALTER TABLE attest_keys ADD COLUMN used_at DOUBLE NOT NULL DEFAULT 0;
                    UPDATE attest_keys SET used_at = attested_at;
                    CREATE INDEX attest_keys_used_at ON attest_keys (used_at);
                    """)
        }
    }

    public func addChallenge(_ hash: String, expires: Date, now: Date) async throws {
        let expiry = expires.timeIntervalSince1970
        try await write { db in
            try db.execute(sql: "DELETE FROM attest_challenges WHERE expires_at < ?", arguments: [now.timeIntervalSince1970 - forgottenChallengeAge])
            try db.execute(sql: "INSERT INTO attest_challenges (hash, expires_at, used) VALUES (?, ?, 0)", arguments: [hash, expiry])
        }
    }

    public func useChallenge(_ hash: String, now: Date) async throws -> ChallengeUse {
        let time = now.timeIntervalSince1970
        return try await write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT expires_at, used FROM attest_challenges WHERE hash = ?", arguments: [hash])
            else { return .unknown }
            if (row["used"] as Int) != 0 { return .used }
            if (row["expires_at"] as Double) <= time { return .expired }
            try db.execute(sql: "UPDATE attest_challenges SET used = 1 WHERE hash = ?", arguments: [hash])
            return .accepted
        }
    }

    public func deviceKey(_ keyID: String) async throws -> DeviceKey? {
        try read { db in
            try Row.fetchOne(
                db, sql: "SELECT public_key, counter, environment, root, attested_at, used_at FROM attest_keys WHERE key_id = ?",
                arguments: [keyID]
            ).map { row in
                // Unreadable: the store's problem (a 500), not an unknown key.
                guard let key = Data(base64Encoded: row["public_key"] as String) else { throw CorruptDeviceKey(keyID: keyID) }
                return DeviceKey(
                    keyID: keyID, publicKey: Array(key), counter: UInt32(clamping: row["counter"] as Int64), environment: row["environment"],
                    root: row["root"], attestedAt: Date(timeIntervalSince1970: row["attested_at"]),
                    usedAt: Date(timeIntervalSince1970: row["used_at"]))
            }
        }
    }

    public func addDeviceKey(_ key: DeviceKey, forgettingKeysUnusedSince unusedSince: Date?) async throws -> Bool {
        try await write { db in
            if let unusedSince {
                try db.execute(
                    sql: "DELETE FROM attest_keys WHERE key_id IN (SELECT key_id FROM attest_keys WHERE used_at < ? LIMIT ?) AND used_at < ?",
                    arguments: [unusedSince.timeIntervalSince1970, forgottenKeysPerAttestation, unusedSince.timeIntervalSince1970])
            }
            try db.execute(
                sql: """
                    INSERT INTO attest_keys (key_id, public_key, counter, environment, root, attested_at, used_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (key_id) DO NOTHING
                    """,
                arguments: [key.keyID, Data(key.publicKey).base64EncodedString(), Int64(key.counter), key.environment, key.root,
                            key.attestedAt.timeIntervalSince1970, key.usedAt.timeIntervalSince1970])
            return db.changesCount == 1
        }
    }

    public func advanceCounter(of keyID: String, to counter: UInt32, now: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "UPDATE attest_keys SET counter = ?, used_at = ? WHERE key_id = ? AND counter < ?",
                arguments: [Int64(counter), now.timeIntervalSince1970, keyID, Int64(counter)])
            return db.changesCount == 1
        }
    }

    public func noteDeviceKeyUsed(_ keyID: String, now: Date, unlessSince: Date) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE attest_keys SET used_at = ? WHERE key_id = ? AND used_at < ?",
                arguments: [now.timeIntervalSince1970, keyID, unlessSince.timeIntervalSince1970])
        }
    }
}
