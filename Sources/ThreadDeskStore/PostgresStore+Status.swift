import Logging
import PostgresNIO

extension PostgresStore {
    /// The schema version the database holds (nil: never migrated), without migrating it.
    public func schemaVersionFound() async throws -> Int? {
        try await database {
            try await client.withConnection { connection in
                let exists = try await connection.rows("SELECT to_regclass('schema_version') IS NOT NULL", logger: logger)
                    .first.flatMap { try $0.decode(Bool.self) } ?? false
                guard exists else { return nil }
                return try await connection.rows("SELECT max(version) FROM schema_version", logger: logger)
                    .first.flatMap { try $0.decode(Int?.self) }
            }
        }
    }

    /// Runs the connection pools (not the migration) for the duration of `body`.
    public static func withPools<T: Sendable>(
        url: String, logger: Logger = Logger(label: "threaddesk.store"), _ body: @Sendable (PostgresStore) async throws -> T
    ) async throws -> T {
        let store = try PostgresStore(url: url, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.client.run() }
            group.addTask { await store.holdingClient.run() }
            defer { group.cancelAll() }
            return try await body(store)
        }
    }
}
