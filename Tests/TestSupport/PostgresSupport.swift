import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import PostgresNIO

/// A new, empty schema in the test PostgreSQL for the duration of `body`, which gets a store URL
/// pointing at it; dropped afterwards.
public func withFreshPostgresSchema<T: Sendable>(_ body: (String) async throws -> T) async throws -> T {
    guard let base = ProcessInfo.processInfo.environment["THREADDESK_POSTGRES_URL"] else {
        throw PostgresSupportError.notConfigured
    }
    let schema = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    try await adminQuery(base, "CREATE SCHEMA \(schema)")
    do {
        let result = try await body("\(base)?search_path=\(schema)")
        try await adminQuery(base, "DROP SCHEMA \(schema) CASCADE")
        return result
    } catch {
        try? await adminQuery(base, "DROP SCHEMA \(schema) CASCADE")
        throw error
    }
}

public enum PostgresSupportError: Error {
    case notConfigured
    case restartFailed(Int32)
    case adminQueryFailed(String, String)
}

private func adminQuery(_ url: String, _ sql: String) async throws {
    let components = URLComponents(string: url)!
    var logger = Logger(label: "postgres-test")
    logger.logLevel = .critical
    let configuration = PostgresConnection.Configuration(
        host: components.host!, port: components.port ?? 5432, username: components.user ?? "postgres",
        password: components.password, database: String(components.path.dropFirst()), tls: .disable)
    do {
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        defer { Task { try? await connection.close() } }
        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
    } catch {
        // PSQLError's own description hides the server's message; the test PostgreSQL has no secrets.
        throw PostgresSupportError.adminQueryFailed(sql, String(reflecting: error))
    }
}

/// Whether scripts/test started a PostgreSQL for this run.
public var postgresIsAvailable: Bool { ProcessInfo.processInfo.environment["THREADDESK_POSTGRES_URL"] != nil }

/// Restarts the test PostgreSQL (fast shutdown, then start), as scripts/with-postgres allows.
public func restartPostgres() async throws {
    guard let command = ProcessInfo.processInfo.environment["THREADDESK_POSTGRES_RESTART"] else {
        throw PostgresSupportError.notConfigured
    }
    // system() blocks its thread for the fraction of a second a fast restart takes; run it off
    // the cooperative pool's hot path.
    let status = await Task.detached { system(command + " >/dev/null 2>&1") }.value
    guard status == 0 else { throw PostgresSupportError.restartFailed(status) }
}
