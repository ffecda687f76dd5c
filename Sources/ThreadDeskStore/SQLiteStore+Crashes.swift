import DiscordREST
import Foundation
import GRDB
import ThreadDeskCore

extension SQLiteStore {
    static func migrateCrashes(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v14: crash reports, their groups and dSYMs") { db in
            try db.execute(
                sql: """
                    CREATE TABLE crash_groups (
                        number INTEGER PRIMARY KEY AUTOINCREMENT, app TEXT NOT NULL, signature_hash TEXT NOT NULL, signature TEXT NOT NULL,
                        kind TEXT NOT NULL, title TEXT NOT NULL, first_version TEXT NOT NULL, last_version TEXT NOT NULL,
                        first_seen DOUBLE NOT NULL, last_seen DOUBLE NOT NULL, fixed_in TEXT, ignored INTEGER NOT NULL DEFAULT 0,
                        regressed_in TEXT, UNIQUE (app, signature_hash));
                    CREATE TABLE crash_reports (
                        id INTEGER PRIMARY KEY, owner TEXT NOT NULL, app TEXT NOT NULL, group_number INTEGER NOT NULL, kind TEXT NOT NULL,
                        app_version TEXT NOT NULL, app_build TEXT NOT NULL, payload_key TEXT NOT NULL, detail TEXT NOT NULL,
                        awaiting TEXT NOT NULL, note_id INTEGER, note_discord_id INTEGER, thread_id INTEGER, follow_up TEXT,
                        created_at DOUBLE NOT NULL, UNIQUE (owner, payload_key));
                    CREATE INDEX crash_reports_group ON crash_reports (app, group_number, owner, created_at);
                    CREATE INDEX crash_reports_note ON crash_reports (note_id);
                    CREATE TABLE crash_answers (owner TEXT NOT NULL, group_number INTEGER NOT NULL, answered_at DOUBLE NOT NULL,
                        PRIMARY KEY (owner, group_number));
                    CREATE TABLE dsyms (
                        app TEXT NOT NULL, uuid TEXT NOT NULL, arch TEXT NOT NULL, name TEXT NOT NULL, bytes BLOB NOT NULL,
                        size INTEGER NOT NULL, uploaded_at DOUBLE NOT NULL, PRIMARY KEY (app, uuid));
                    """)
        }
    }

    private static let groupColumns =
        "number, app, signature_hash, signature, kind, title, first_version, last_version, first_seen, last_seen, fixed_in, ignored, regressed_in"

    private static func group(_ row: Row) -> CrashGroup? {
        guard let app = AppID(row[1] as String) else { return nil }
        return CrashGroup(
            number: row[0], app: app, signatureHash: row[2], signature: row[3], kind: row[4], title: row[5], firstVersion: row[6],
            lastVersion: row[7], firstSeen: Date(timeIntervalSince1970: row[8]), lastSeen: Date(timeIntervalSince1970: row[9]),
            fixedIn: row[10], ignored: (row[11] as Int64) != 0, regressedIn: row[12])
    }

    public func recordCrashGroup(
        app: AppID, signatureHash: String, signature: String, kind: String, title: String, version: String, at date: Date
    ) async throws -> CrashGroup {
        let seen = date.timeIntervalSince1970
        return try await write { db in
            // A group seen before is updated without an INSERT: an upsert that meets its conflict
            // still draws a number (AUTOINCREMENT), and numbers would count every report of every app.
            try db.execute(
                sql: """
                    UPDATE crash_groups SET last_version = CASE WHEN ? >= last_seen THEN ? ELSE last_version END, last_seen = max(last_seen, ?)
                    WHERE app = ? AND signature_hash = ?
                    """,
                arguments: [seen, version, seen, app.rawValue, signatureHash])
            if db.changesCount == 0 {
                try db.execute(
                    sql: """
                        INSERT INTO crash_groups (app, signature_hash, signature, kind, title, first_version, last_version, first_seen, last_seen)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (app, signature_hash) DO UPDATE SET
                        last_version = CASE WHEN excluded.last_seen >= last_seen THEN excluded.last_version ELSE last_version END,
                        last_seen = max(last_seen, excluded.last_seen)
                    """,
                    arguments: [app.rawValue, signatureHash, signature, kind, title, version, version, seen, seen])
            }
            let row = try Row.fetchOne(
                db, sql: "SELECT \(Self.groupColumns) FROM crash_groups WHERE app = ? AND signature_hash = ?",
                arguments: [app.rawValue, signatureHash])
            guard let row, let group = Self.group(row) else { throw CrashGroupMissing() }
            return group
        }
    }

    public func crashGroup(app: AppID, number: Int64) async throws -> CrashGroup? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.groupColumns) FROM crash_groups WHERE app = ? AND number = ?", arguments: [app.rawValue, number])
                .flatMap(Self.group)
        }
    }

    public func saveCrashRules(_ group: CrashGroup) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE crash_groups SET fixed_in = ?, ignored = ?, regressed_in = ? WHERE app = ? AND number = ?",
                arguments: [group.fixedIn, group.ignored ? 1 : 0, group.regressedIn, group.app.rawValue, group.number])
        }
    }

    public func markCrashRegression(app: AppID, number: Int64, version: String) async throws {
        try await write { db in
            try db.execute(sql: "UPDATE crash_groups SET regressed_in = ? WHERE app = ? AND number = ?", arguments: [version, app.rawValue, number])
        }
    }

    public func forgetCrashAnswer(owner: UserID, group: Int64) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM crash_answers WHERE owner = ? AND group_number = ?", arguments: [owner.rawValue, group])
        }
    }

    public func crashGroups(app: AppID, since: Date, limit: Int) async throws -> [(group: CrashGroup, counts: CrashGroupCounts)] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Self.groupColumns.split(separator: ",").map { "g." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")),
                        count(DISTINCT r.owner), count(*),
                        count(DISTINCT CASE WHEN r.created_at >= ? THEN r.owner END), count(CASE WHEN r.created_at >= ? THEN 1 END) AS recent
                    FROM crash_groups g JOIN crash_reports r ON r.app = g.app AND r.group_number = g.number
                    WHERE g.app = ? AND g.last_seen >= ?
                    GROUP BY g.number HAVING recent > 0
                    ORDER BY count(DISTINCT CASE WHEN r.created_at >= ? THEN r.owner END) DESC, g.last_seen DESC LIMIT ?
                    """,
                arguments: [since.timeIntervalSince1970, since.timeIntervalSince1970, app.rawValue, since.timeIntervalSince1970, since.timeIntervalSince1970, max(0, limit)]
            ).compactMap { row in
                Self.group(row).map { ($0, CrashGroupCounts(users: row[13], reports: row[14], recentUsers: row[15], recentReports: row[16])) }
            }
        }
    }

    public func crashCounts(app: AppID, group: Int64, since: Date) async throws -> CrashGroupCounts {
        try read { db in
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(DISTINCT owner), count(*), count(DISTINCT CASE WHEN created_at >= ? THEN owner END),
                        count(CASE WHEN created_at >= ? THEN 1 END)
                    FROM crash_reports WHERE app = ? AND group_number = ?
                    """,
                arguments: [since.timeIntervalSince1970, since.timeIntervalSince1970, app.rawValue, group])
            guard let row else { return CrashGroupCounts() }
            return CrashGroupCounts(users: row[0], reports: row[1], recentUsers: row[2], recentReports: row[3])
        }
    }

    public func crashAppearances(app: AppID, group: Int64, limit: Int) async throws -> [CrashAppearance] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT owner, max(thread_id), count(*), max(created_at) AS last FROM crash_reports WHERE app = ? AND group_number = ?
                    GROUP BY owner ORDER BY last DESC LIMIT ?
                    """,
                arguments: [app.rawValue, group, max(0, limit)]
            ).compactMap { row in
                guard let owner = UserID(storageKey: row[0] as String) else { return nil }
                return CrashAppearance(
                    owner: owner, threadID: (row[1] as Int64?).map(Snowflake.init(column:)), reports: row[2],
                    lastSeen: Date(timeIntervalSince1970: row[3]))
            }
        }
    }

    private static let reportColumns =
        "id, owner, group_number, kind, app_version, app_build, payload_key, detail, awaiting, note_id, note_discord_id, thread_id, follow_up, created_at"

    private static func report(_ row: Row) -> CrashReport? {
        guard let owner = UserID(storageKey: row[1] as String) else { return nil }
        let awaiting = (row[8] as String).split(separator: " ").map(String.init)
        return CrashReport(
            id: Snowflake(column: row[0]), owner: owner, group: row[2], kind: row[3], appVersion: row[4], appBuild: row[5], payloadKey: row[6],
            detail: row[7], awaiting: awaiting, noteID: (row[9] as Int64?).map(Snowflake.init(column:)),
            noteDiscordID: (row[10] as Int64?).map(Snowflake.init(column:)), threadID: (row[11] as Int64?).map(Snowflake.init(column:)),
            followUp: row[12], createdAt: Date(timeIntervalSince1970: row[13]))
    }

    public func saveCrashReport(_ report: CrashReport) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO crash_reports (\(Self.reportColumns), app) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET group_number = excluded.group_number, kind = excluded.kind, app_version = excluded.app_version,
                        app_build = excluded.app_build, detail = excluded.detail, awaiting = excluded.awaiting, note_id = excluded.note_id,
                        note_discord_id = excluded.note_discord_id, thread_id = excluded.thread_id, follow_up = excluded.follow_up
                    ON CONFLICT DO NOTHING
                    """,
                arguments: [
                    report.id.column, report.owner.rawValue, report.group, report.kind, report.appVersion, report.appBuild, report.payloadKey,
                    report.detail, report.awaiting.joined(separator: " "), report.noteID?.column, report.noteDiscordID?.column,
                    report.threadID?.column, report.followUp, report.createdAt.timeIntervalSince1970, report.owner.app.rawValue,
                ])
            return db.changesCount > 0
        }
    }

    public func crashReport(_ id: Snowflake) async throws -> CrashReport? {
        try read { db in try Row.fetchOne(db, sql: "SELECT \(Self.reportColumns) FROM crash_reports WHERE id = ?", arguments: [id.column]).flatMap(Self.report) }
    }

    public func crashReport(owner: UserID, payloadKey: String) async throws -> CrashReport? {
        try read { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.reportColumns) FROM crash_reports WHERE owner = ? AND payload_key = ?", arguments: [owner.rawValue, payloadKey]
            ).flatMap(Self.report)
        }
    }

    public func crashReport(note: Snowflake) async throws -> CrashReport? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.reportColumns) FROM crash_reports WHERE note_id = ?", arguments: [note.column]).flatMap(Self.report)
        }
    }

    public func crashReports(of owner: UserID) async throws -> [CrashReport] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT \(Self.reportColumns) FROM crash_reports WHERE owner = ? ORDER BY created_at, id", arguments: [owner.rawValue])
                .compactMap(Self.report)
        }
    }

    public func crashReports(awaiting uuid: String, app: AppID, limit: Int) async throws -> [CrashReport] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT \(Self.reportColumns) FROM crash_reports WHERE app = ? AND instr(' ' || awaiting || ' ', ?) > 0 ORDER BY created_at, id LIMIT ?",
                arguments: [app.rawValue, " \(uuid) ", max(0, limit)]
            ).compactMap(Self.report)
        }
    }

    public func markCrashAnswered(owner: UserID, group: Int64, at date: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "INSERT INTO crash_answers (owner, group_number, answered_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                arguments: [owner.rawValue, group, date.timeIntervalSince1970])
            return db.changesCount > 0
        }
    }

    public func saveDSYM(_ file: DSYMFile) async throws {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO dsyms (app, uuid, arch, name, bytes, size, uploaded_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (app, uuid) DO UPDATE SET arch = excluded.arch, name = excluded.name, bytes = excluded.bytes, size = excluded.size,
                        uploaded_at = excluded.uploaded_at
                    """,
                arguments: [file.app.rawValue, file.uuid, file.arch, file.name, file.bytes, file.bytes.count, file.uploadedAt.timeIntervalSince1970])
        }
    }

    public func dsym(app: AppID, uuid: String) async throws -> DSYMFile? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT arch, name, bytes, uploaded_at FROM dsyms WHERE app = ? AND uuid = ?", arguments: [app.rawValue, uuid]).map {
                DSYMFile(app: app, uuid: uuid, arch: $0[0], name: $0[1], bytes: $0[2], uploadedAt: Date(timeIntervalSince1970: $0[3]))
            }
        }
    }

    public func dsymDescriptions(app: AppID, uuids: [String]) async throws -> [DSYMFile] {
        guard !uuids.isEmpty else { return [] }
        let marks = Array(repeating: "?", count: uuids.count).joined(separator: ",")
        return try read { db in
            try Row.fetchAll(
                db, sql: "SELECT uuid, arch, name, size, uploaded_at FROM dsyms WHERE app = ? AND uuid IN (\(marks)) ORDER BY uuid",
                arguments: StatementArguments([app.rawValue] + uuids)
            ).map {
                DSYMFile(app: app, uuid: $0[0], arch: $0[1], name: $0[2], bytes: Data(), size: $0[3], uploadedAt: Date(timeIntervalSince1970: $0[4]))
            }
        }
    }

    public func dsymUsage(app: AppID?) async throws -> (count: Int, bytes: Int) {
        try read { db in
            let row = try Row.fetchOne(
                db, sql: "SELECT count(*), coalesce(sum(size), 0) FROM dsyms WHERE ? IS NULL OR app = ?", arguments: [app?.rawValue, app?.rawValue])
            return (row?[0] ?? 0, row?[1] ?? 0)
        }
    }

    /// The user's reports and answers, in the erasure's transaction (the groups stay: they count
    /// what is left).
    static func eraseCrashes(of id: UserID, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM crash_reports WHERE owner = ?", arguments: [id.rawValue])
        try db.execute(sql: "DELETE FROM crash_answers WHERE owner = ?", arguments: [id.rawValue])
    }
}

/// A group just recorded could not be read back (the store changed under the statement).
struct CrashGroupMissing: Error, CustomStringConvertible {
    var description: String { "the crash group just recorded was not found" }
}
