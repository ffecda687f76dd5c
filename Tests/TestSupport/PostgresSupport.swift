import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import PostgresNIO

/// A new, empty database in the test PostgreSQL for the duration of `body`, which gets a store URL
/// pointing at it; dropped afterwards.
///
/// A database, not a schema of the shared one: a store migrates under an advisory lock, and
/// PostgreSQL's advisory locks are per database, so the stores of tests running at once took
/// turns migrating, and on a busy machine the last in line waited past the store's 30 s
/// statement timeout.
public func withFreshPostgresSchema<T: Sendable>(_ body: (String) async throws -> T) async throws -> T {
    guard let base = ProcessInfo.processInfo.environment["THREADDESK_POSTGRES_URL"],
        var components = URLComponents(string: base)
    else {
        throw PostgresSupportError.notConfigured
    }
    let database = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    components.path = "/" + database
    guard let url = components.string else { throw PostgresSupportError.notConfigured }
    try await adminQuery(base, "CREATE DATABASE \(database)")
    // FORCE: a store's pools may still be closing their connections.
    let drop = "DROP DATABASE IF EXISTS \(database) WITH (FORCE)"
    do {
        let result = try await body(url)
        try await adminQuery(base, drop)
        return result
    } catch {
        try? await adminQuery(base, drop)
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
