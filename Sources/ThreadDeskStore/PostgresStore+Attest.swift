import Foundation
import PostgresNIO

extension PostgresStore {
    /// App Attest's tables (schema version 7; the root of each key, version 8: keys kept before
    /// have none, and attest anew; when each key was last used, version 9).
    static let attestationSchema = [
        "CREATE TABLE IF NOT EXISTS attest_challenges (hash TEXT PRIMARY KEY, expires_at TIMESTAMPTZ NOT NULL, used BOOLEAN NOT NULL)",
        "CREATE INDEX IF NOT EXISTS attest_challenges_expiry ON attest_challenges (expires_at)",
        """
        CREATE TABLE IF NOT EXISTS attest_keys (
            key_id TEXT PRIMARY KEY, public_key TEXT NOT NULL, counter BIGINT NOT NULL, environment TEXT NOT NULL,
            attested_at TIMESTAMPTZ NOT NULL)
        """,
        "ALTER TABLE attest_keys ADD COLUMN IF NOT EXISTS root TEXT NOT NULL DEFAULT ''",
        // The backfill runs once: in the transaction that adds the column.
        """
        DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                           WHERE table_schema = current_schema() AND table_name = 'attest_keys' AND column_name = 'used_at') THEN
                -- A default, so replicas of the version before, which write no used_at, keep
                -- attesting while the others are replaced.
                ALTER TABLE attest_keys ADD COLUMN used_at TIMESTAMPTZ NOT NULL DEFAULT now();
                UPDATE attest_keys SET used_at = attested_at;
            END IF;
        END $$
        """,
        "ALTER TABLE attest_keys ALTER COLUMN used_at SET DEFAULT now()",
        "CREATE INDEX IF NOT EXISTS attest_keys_used_at ON attest_keys (used_at)",
    ]

    public func addChallenge(_ hash: String, expires: Date, now: Date) async throws {
        let forgotten = now.addingTimeInterval(-forgottenChallengeAge)
        try await database {
            try await client.withConnection { connection in
                try await connection.rows("DELETE FROM attest_challenges WHERE expires_at < \(forgotten)", logger: logger)
                try await connection.rows(
                    "INSERT INTO attest_challenges (hash, expires_at, used) VALUES (\(hash), \(expires), false)", logger: logger)
            }
        }
    }

    /// One statement takes the challenge; only when it took nothing does a second (with a fresh
    /// snapshot) say why, so a replica that used it a moment ago reads as `used`, not `expired`.
    public func useChallenge(_ hash: String, now: Date) async throws -> ChallengeUse {
        try await database {
            try await client.withConnection { connection in
                let taken = try await connection.rows(
                    "UPDATE attest_challenges SET used = true WHERE hash = \(hash) AND NOT used AND expires_at > \(now) RETURNING 1",
                    logger: logger)
                if !taken.isEmpty { return .accepted }
                let rows = try await connection.rows("SELECT used FROM attest_challenges WHERE hash = \(hash)", logger: logger)
                guard let row = rows.first else { return .unknown }
                return try row.decode(Bool.self) ? .used : .expired
            }
        }
    }

    public func deviceKey(_ keyID: String) async throws -> DeviceKey? {
        try await database {
            let rows = try await client.withConnection { connection in
                try await connection.rows(
                    "SELECT public_key, counter, environment, root, attested_at, used_at FROM attest_keys WHERE key_id = \(keyID)",
                    logger: logger)
            }
            guard let row = rows.first else { return nil }
            let (key, counter, environment, root, attestedAt, usedAt) = try row.decode((String, Int64, String, String, Date, Date).self)
            // Unreadable: the store's problem (a 500), not an unknown key.
            guard let publicKey = Data(base64Encoded: key) else { throw CorruptDeviceKey(keyID: keyID) }
            return DeviceKey(
                keyID: keyID, publicKey: Array(publicKey), counter: UInt32(clamping: counter), environment: environment, root: root,
                attestedAt: attestedAt, usedAt: usedAt)
        }
    }

    public func addDeviceKey(_ key: DeviceKey, forgettingKeysUnusedSince unusedSince: Date?) async throws -> Bool {
        let publicKey = Data(key.publicKey).base64EncodedString()
        return try await database {
            try await client.withConnection { connection in
                if let unusedSince {
                    try await connection.rows(
                        """
                        DELETE FROM attest_keys WHERE key_id IN
                            (SELECT key_id FROM attest_keys WHERE used_at < \(unusedSince) LIMIT \(forgottenKeysPerAttestation))
                            AND used_at < \(unusedSince)
                        """, logger: logger)
                }
                return try await connection.rows(
                    """
                    INSERT INTO attest_keys (key_id, public_key, counter, environment, root, attested_at, used_at)
                    VALUES (\(key.keyID), \(publicKey), \(Int64(key.counter)), \(key.environment), \(key.root), \(key.attestedAt), \(key.usedAt))
                    ON CONFLICT (key_id) DO NOTHING RETURNING 1
                    """, logger: logger)
            }.count == 1
        }
    }

    public func advanceCounter(of keyID: String, to counter: UInt32, now: Date) async throws -> Bool {
        let value = Int64(counter)
        return try await database {
            try await client.withConnection { connection in
                try await connection.rows(
                    "UPDATE attest_keys SET counter = \(value), used_at = \(now) WHERE key_id = \(keyID) AND counter < \(value) RETURNING 1",
                    logger: logger)
            }.count == 1
        }
    }

    public func noteDeviceKeyUsed(_ keyID: String, now: Date, unlessSince: Date) async throws {
        try await database {
            _ = try await client.withConnection { connection in
                try await connection.rows(
                    "UPDATE attest_keys SET used_at = \(now) WHERE key_id = \(keyID) AND used_at < \(unlessSince)", logger: logger)
            }
        }
    }
}
