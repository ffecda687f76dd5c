import Foundation
import GRDB

extension SQLiteStore {
    /// The migrations this version knows and whether each is applied, read without opening the
    /// store for writing (so nothing is migrated), and those applied that this version does not
    /// know (a newer ThreadDesk's).
    public static func migrationStatus(path: String) throws -> (known: [(name: String, applied: Bool)], unknown: [String]) {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        let applied = try queue.read { db in
            try db.tableExists("grdb_migrations") ? try migrator.appliedIdentifiers(db) : []
        }
        return (migrator.migrations.map { ($0, applied.contains($0)) }, applied.subtracting(migrator.migrations).sorted())
    }

    /// What waits in the outbox of the database at `path`, read without opening the store for
    /// writing; nil in a database the outbox's migration has not reached yet.
    public static func outboxUsage(path: String) throws -> OutboxUsage? {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in try db.tableExists("outbox_items") ? try outboxUsage(db, of: nil) : nil }
    }
}
