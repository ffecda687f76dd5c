import DiscordREST
import Foundation
import Logging
import PostgresNIO
import ThreadDeskCore

extension PostgresStore {
    /// Crash reports, their groups and the dSYMs (schema 16).
    static let crashSchema = [
        """
        CREATE TABLE IF NOT EXISTS crash_groups (
            number BIGSERIAL PRIMARY KEY, app TEXT NOT NULL, signature_hash TEXT NOT NULL, signature TEXT NOT NULL, kind TEXT NOT NULL,
            title TEXT NOT NULL, first_version TEXT NOT NULL, last_version TEXT NOT NULL, first_seen DOUBLE PRECISION NOT NULL,
            last_seen DOUBLE PRECISION NOT NULL, fixed_in TEXT, ignored BOOLEAN NOT NULL DEFAULT false, regressed_in TEXT,
            UNIQUE (app, signature_hash))
        """,
        """
        CREATE TABLE IF NOT EXISTS crash_reports (
            id BIGINT PRIMARY KEY, owner TEXT NOT NULL, app TEXT NOT NULL, group_number BIGINT NOT NULL, kind TEXT NOT NULL,
            app_version TEXT NOT NULL, app_build TEXT NOT NULL, payload_key TEXT NOT NULL, detail TEXT NOT NULL, awaiting TEXT NOT NULL,
            note_id BIGINT, note_discord_id BIGINT, thread_id BIGINT, follow_up TEXT, created_at DOUBLE PRECISION NOT NULL,
            UNIQUE (owner, payload_key))
        """,
        "CREATE INDEX IF NOT EXISTS crash_reports_group ON crash_reports (app, group_number, owner, created_at)",
        "CREATE INDEX IF NOT EXISTS crash_reports_note ON crash_reports (note_id)",
        """
        CREATE TABLE IF NOT EXISTS crash_answers (
            owner TEXT NOT NULL, group_number BIGINT NOT NULL, answered_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (owner, group_number))
        """,
        """
        CREATE TABLE IF NOT EXISTS dsyms (
            app TEXT NOT NULL, uuid TEXT NOT NULL, arch TEXT NOT NULL, name TEXT NOT NULL, bytes BYTEA NOT NULL, size BIGINT NOT NULL,
            uploaded_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (app, uuid))
        """,
    ]

    private static let groupColumns =
        "number, app, signature_hash, signature, kind, title, first_version, last_version, first_seen, last_seen, fixed_in, ignored, regressed_in"

    private static func group(_ row: PostgresRow) throws -> CrashGroup? {
        let (number, app, hash, signature, kind, title, first, last, firstSeen, lastSeen, fixedIn, ignored, regressedIn) = try row.decode(
            (Int64, String, String, String, String, String, String, String, Double, Double, String?, Bool, String?).self)
        guard let appID = AppID(app) else { return nil }
        return CrashGroup(
            number: number, app: appID, signatureHash: hash, signature: signature, kind: kind, title: title, firstVersion: first, lastVersion: last,
            firstSeen: Date(timeIntervalSince1970: firstSeen), lastSeen: Date(timeIntervalSince1970: lastSeen), fixedIn: fixedIn, ignored: ignored,
            regressedIn: regressedIn)
    }

    public func recordCrashGroup(
        app: AppID, signatureHash: String, signature: String, kind: String, title: String, version: String, at date: Date
    ) async throws -> CrashGroup {
        let seen = date.timeIntervalSince1970
        // A group seen before is updated without an INSERT: an insert that meets its conflict still
        // draws a number from the sequence, and numbers would count every report of every app.
        let seenAgain = try await query(
            """
            UPDATE crash_groups SET last_version = CASE WHEN \(seen) >= last_seen THEN \(version) ELSE last_version END,
                last_seen = GREATEST(last_seen, \(seen))
            WHERE app = \(app.rawValue) AND signature_hash = \(signatureHash)
            RETURNING \(unescaped: Self.groupColumns)
            """)
        if let group = try seenAgain.first.flatMap(Self.group) { return group }
        let rows = try await query(
            """
            INSERT INTO crash_groups (app, signature_hash, signature, kind, title, first_version, last_version, first_seen, last_seen)
            VALUES (\(app.rawValue), \(signatureHash), \(signature), \(kind), \(title), \(version), \(version), \(seen), \(seen))
            ON CONFLICT (app, signature_hash) DO UPDATE SET
                last_version = CASE WHEN excluded.last_seen >= crash_groups.last_seen THEN excluded.last_version ELSE crash_groups.last_version END,
                last_seen = GREATEST(crash_groups.last_seen, excluded.last_seen)
            RETURNING \(unescaped: Self.groupColumns)
            """)
        guard let group = try rows.first.flatMap(Self.group) else { throw CrashGroupMissing() }
        return group
    }

    public func crashGroup(app: AppID, number: Int64) async throws -> CrashGroup? {
        try await query("SELECT \(unescaped: Self.groupColumns) FROM crash_groups WHERE app = \(app.rawValue) AND number = \(number)")
            .first.flatMap(Self.group)
    }

    public func saveCrashRules(_ group: CrashGroup) async throws {
        _ = try await query(
            """
            UPDATE crash_groups SET fixed_in = \(group.fixedIn), ignored = \(group.ignored), regressed_in = \(group.regressedIn)
            WHERE app = \(group.app.rawValue) AND number = \(group.number)
            """)
    }

    public func markCrashRegression(app: AppID, number: Int64, version: String) async throws {
        _ = try await query("UPDATE crash_groups SET regressed_in = \(version) WHERE app = \(app.rawValue) AND number = \(number)")
    }

    public func forgetCrashAnswer(owner: UserID, group: Int64) async throws {
        _ = try await query("DELETE FROM crash_answers WHERE owner = \(owner.rawValue) AND group_number = \(group)")
    }

    public func crashGroups(app: AppID, since: Date, limit: Int) async throws -> [(group: CrashGroup, counts: CrashGroupCounts)] {
        let since = since.timeIntervalSince1970
        let columns = Self.groupColumns.split(separator: ",").map { "g." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        return try await query(
            """
            SELECT \(unescaped: columns), count(DISTINCT r.owner), count(*),
                count(DISTINCT r.owner) FILTER (WHERE r.created_at >= \(since)), count(*) FILTER (WHERE r.created_at >= \(since))
            FROM crash_groups g JOIN crash_reports r ON r.app = g.app AND r.group_number = g.number
            WHERE g.app = \(app.rawValue) AND g.last_seen >= \(since)
            GROUP BY g.number HAVING count(*) FILTER (WHERE r.created_at >= \(since)) > 0
            ORDER BY count(DISTINCT r.owner) FILTER (WHERE r.created_at >= \(since)) DESC, g.last_seen DESC LIMIT \(max(0, limit))
            """
        ).compactMap { row in
            guard let group = try Self.group(row) else { return nil }
            let counts = try row.decode((Int64, String, String, String, String, String, String, String, Double, Double, String?, Bool, String?, Int64, Int64, Int64, Int64).self)
            return (group, CrashGroupCounts(users: Int(counts.13), reports: Int(counts.14), recentUsers: Int(counts.15), recentReports: Int(counts.16)))
        }
    }

    public func crashCounts(app: AppID, group: Int64, since: Date) async throws -> CrashGroupCounts {
        let since = since.timeIntervalSince1970
        let row = try await query(
            """
            SELECT count(DISTINCT owner), count(*), count(DISTINCT owner) FILTER (WHERE created_at >= \(since)),
                count(*) FILTER (WHERE created_at >= \(since))
            FROM crash_reports WHERE app = \(app.rawValue) AND group_number = \(group)
            """
        ).first
        guard let row else { return CrashGroupCounts() }
        let (users, reports, recentUsers, recentReports) = try row.decode((Int64, Int64, Int64, Int64).self)
        return CrashGroupCounts(users: Int(users), reports: Int(reports), recentUsers: Int(recentUsers), recentReports: Int(recentReports))
    }

    public func crashAppearances(app: AppID, group: Int64, limit: Int) async throws -> [CrashAppearance] {
        try await query(
            """
            SELECT owner, max(thread_id), count(*), max(created_at) AS last FROM crash_reports
            WHERE app = \(app.rawValue) AND group_number = \(group) GROUP BY owner ORDER BY last DESC LIMIT \(max(0, limit))
            """
        ).compactMap { row in
            let (owner, thread, reports, last) = try row.decode((String, Int64?, Int64, Double).self)
            guard let ownerID = UserID(storageKey: owner) else { return nil }
            return CrashAppearance(
                owner: ownerID, threadID: thread.map(Snowflake.init(column:)), reports: Int(reports), lastSeen: Date(timeIntervalSince1970: last))
        }
    }

    private static let reportColumns =
        "id, owner, group_number, kind, app_version, app_build, payload_key, detail, awaiting, note_id, note_discord_id, thread_id, follow_up, created_at"

    private static func report(_ row: PostgresRow) throws -> CrashReport? {
        let (id, owner, group, kind, version, build, key, detail, awaiting, note, noteDiscord, thread, followUp, created) = try row.decode(
            (Int64, String, Int64, String, String, String, String, String, String, Int64?, Int64?, Int64?, String?, Double).self)
        guard let ownerID = UserID(storageKey: owner) else { return nil }
        return CrashReport(
            id: Snowflake(column: id), owner: ownerID, group: group, kind: kind, appVersion: version, appBuild: build, payloadKey: key,
            detail: detail, awaiting: awaiting.split(separator: " ").map(String.init), noteID: note.map(Snowflake.init(column:)),
            noteDiscordID: noteDiscord.map(Snowflake.init(column:)), threadID: thread.map(Snowflake.init(column:)), followUp: followUp,
            createdAt: Date(timeIntervalSince1970: created))
    }

    /// The owner's reports are written under their lock: no other write of the same payload runs
    /// between the look and the insert.
    public func saveCrashReport(_ report: CrashReport) async throws -> Bool {
        if let kept = try await crashReport(owner: report.owner, payloadKey: report.payloadKey), kept.id != report.id { return false }
        _ = try await query(
            """
            INSERT INTO crash_reports (\(unescaped: Self.reportColumns), app)
            VALUES (\(report.id.column), \(report.owner.rawValue), \(report.group), \(report.kind), \(report.appVersion), \(report.appBuild),
                \(report.payloadKey), \(report.detail), \(report.awaiting.joined(separator: " ")), \(report.noteID?.column),
                \(report.noteDiscordID?.column), \(report.threadID?.column), \(report.followUp), \(report.createdAt.timeIntervalSince1970),
                \(report.owner.app.rawValue))
            ON CONFLICT (id) DO UPDATE SET group_number = excluded.group_number, kind = excluded.kind, app_version = excluded.app_version,
                app_build = excluded.app_build, detail = excluded.detail, awaiting = excluded.awaiting, note_id = excluded.note_id,
                note_discord_id = excluded.note_discord_id, thread_id = excluded.thread_id, follow_up = excluded.follow_up
            """)
        return true
    }

    public func crashReport(_ id: Snowflake) async throws -> CrashReport? {
        try await query("SELECT \(unescaped: Self.reportColumns) FROM crash_reports WHERE id = \(id.column)").first.flatMap(Self.report)
    }

    public func crashReport(owner: UserID, payloadKey: String) async throws -> CrashReport? {
        try await query("SELECT \(unescaped: Self.reportColumns) FROM crash_reports WHERE owner = \(owner.rawValue) AND payload_key = \(payloadKey)")
            .first.flatMap(Self.report)
    }

    public func crashReport(note: Snowflake) async throws -> CrashReport? {
        try await query("SELECT \(unescaped: Self.reportColumns) FROM crash_reports WHERE note_id = \(note.column)").first.flatMap(Self.report)
    }

    public func crashReports(of owner: UserID) async throws -> [CrashReport] {
        try await query("SELECT \(unescaped: Self.reportColumns) FROM crash_reports WHERE owner = \(owner.rawValue) ORDER BY created_at, id")
            .compactMap(Self.report)
    }

    public func crashReports(awaiting uuid: String, app: AppID, limit: Int) async throws -> [CrashReport] {
        try await query(
            """
            SELECT \(unescaped: Self.reportColumns) FROM crash_reports
            WHERE app = \(app.rawValue) AND strpos(' ' || awaiting || ' ', \(" \(uuid) ")) > 0 ORDER BY created_at, id LIMIT \(max(0, limit))
            """
        ).compactMap(Self.report)
    }

    public func markCrashAnswered(owner: UserID, group: Int64, at date: Date) async throws -> Bool {
        !(try await query(
            """
            INSERT INTO crash_answers (owner, group_number, answered_at) VALUES (\(owner.rawValue), \(group), \(date.timeIntervalSince1970))
            ON CONFLICT DO NOTHING RETURNING 1
            """
        ).isEmpty)
    }

    public func saveDSYM(_ file: DSYMFile) async throws {
        _ = try await query(
            """
            INSERT INTO dsyms (app, uuid, arch, name, bytes, size, uploaded_at)
            VALUES (\(file.app.rawValue), \(file.uuid), \(file.arch), \(file.name), \(file.bytes), \(Int64(file.bytes.count)),
                \(file.uploadedAt.timeIntervalSince1970))
            ON CONFLICT (app, uuid) DO UPDATE SET arch = excluded.arch, name = excluded.name, bytes = excluded.bytes, size = excluded.size,
                uploaded_at = excluded.uploaded_at
            """)
    }

    public func dsym(app: AppID, uuid: String) async throws -> DSYMFile? {
        guard let row = try await query("SELECT arch, name, bytes, uploaded_at FROM dsyms WHERE app = \(app.rawValue) AND uuid = \(uuid)").first
        else { return nil }
        let (arch, name, bytes, uploaded) = try row.decode((String, String, Data, Double).self)
        return DSYMFile(app: app, uuid: uuid, arch: arch, name: name, bytes: bytes, uploadedAt: Date(timeIntervalSince1970: uploaded))
    }

    public func dsymDescriptions(app: AppID, uuids: [String]) async throws -> [DSYMFile] {
        guard !uuids.isEmpty else { return [] }
        return try await query(
            "SELECT uuid, arch, name, size, uploaded_at FROM dsyms WHERE app = \(app.rawValue) AND uuid = ANY(\(uuids)) ORDER BY uuid"
        ).map { row in
            let (uuid, arch, name, size, uploaded) = try row.decode((String, String, String, Int64, Double).self)
            return DSYMFile(app: app, uuid: uuid, arch: arch, name: name, bytes: Data(), size: Int(size), uploadedAt: Date(timeIntervalSince1970: uploaded))
        }
    }

    public func dsymUsage(app: AppID?) async throws -> (count: Int, bytes: Int) {
        guard let row = try await query(
            "SELECT count(*), coalesce(sum(size), 0)::BIGINT FROM dsyms WHERE \(app?.rawValue)::TEXT IS NULL OR app = \(app?.rawValue)"
        ).first else { return (0, 0) }
        let (count, bytes) = try row.decode((Int64, Int64).self)
        return (Int(count), Int(bytes))
    }

    /// The user's reports and answers, in the erasure's transaction.
    static func eraseCrashes(of id: UserID, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.rows("DELETE FROM crash_reports WHERE owner = \(id.rawValue)", logger: logger)
        try await connection.rows("DELETE FROM crash_answers WHERE owner = \(id.rawValue)", logger: logger)
    }
}
