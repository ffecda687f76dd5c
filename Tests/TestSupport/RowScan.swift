import Foundation
import GRDB
import Logging
import PostgresNIO

/// What a scan of a whole database found: the tables it read (from the schema itself, so a table
/// added later is read too) and, per `table.column`, how many rows mention one of the needles.
public struct RowScan: Sendable, CustomStringConvertible {
    public var tables: Set<String>
    public var mentions: [String: Int]

    public var description: String { mentions.isEmpty ? "nothing" : mentions.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") }
}

/// Every column of every table of the SQLite database at `path`, read as text, searched for each
/// of `needles`.
public func scanSQLite(_ path: String, for needles: [String]) throws -> RowScan {
    var configuration = Configuration()
    configuration.readonly = true
    configuration.busyMode = .timeout(10)
    let queue = try DatabaseQueue(path: path, configuration: configuration)
    defer { try? queue.close() }
    return try queue.read { db in
        let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        var scan = RowScan(tables: Set(tables), mentions: [:])
        for table in tables {
            for column in try db.columns(in: table).map(\.name) {
                for needle in needles {
                    let count = try Int.fetchOne(
                        db, sql: "SELECT count(*) FROM \"\(table)\" WHERE instr(CAST(\"\(column)\" AS TEXT), ?) > 0", arguments: [needle]) ?? 0
                    if count > 0 { scan.mentions["\(table).\(column)", default: 0] += count }
                }
            }
        }
        return scan
    }
}

/// The same for the PostgreSQL database at `url` (its current schema); binary columns are read
/// as escaped text.
public func scanPostgres(_ url: String, for needles: [String]) async throws -> RowScan {
    guard let components = URLComponents(string: url), let host = components.host else { throw PostgresSupportError.notConfigured }
    var logger = Logger(label: "row-scan")
    logger.logLevel = .critical
    let configuration = PostgresConnection.Configuration(
        host: host, port: components.port ?? 5432, username: components.user ?? "postgres", password: components.password,
        database: String(components.path.dropFirst()), tls: .disable)
    let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
    do {
        let columns = try await connection.query(
            """
            SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c
            JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
            WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
            """, logger: logger
        ).collect().map { try $0.decode((String, String, String).self) }
        var scan = RowScan(tables: Set(columns.map(\.0)), mentions: [:])
        for (table, column, type) in columns {
            let text = type == "bytea" ? "encode(\"\(column)\", 'escape')" : "CAST(\"\(column)\" AS TEXT)"
            for needle in needles {
                let rows = try await connection.query(
                    PostgresQuery(unsafeSQL: "SELECT count(*)::BIGINT FROM \"\(table)\" WHERE strpos(\(text), $1) > 0", binds: binds(needle)),
                    logger: logger
                ).collect()
                let count = try rows.first?.decode(Int64.self) ?? 0
                if count > 0 { scan.mentions["\(table).\(column)", default: 0] += Int(count) }
            }
        }
        try await connection.close()
        return scan
    } catch {
        try? await connection.close()
        throw error
    }
}

private func binds(_ value: String) -> PostgresBindings {
    var bindings = PostgresBindings()
    bindings.append(value)
    return bindings
}
