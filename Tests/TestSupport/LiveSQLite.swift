import GRDB

/// The SQLite file of a server that is running, opened beside it. The server's own writes (the
/// outbox's delivery, a session's last use) hold the write lock for moments at a time, so a test
/// that writes here waits its turn, up to a deadline, instead of failing at once with
/// "database is locked" — which is what a connection without a busy timeout does.
public func openLiveSQLite(_ path: String) throws -> DatabaseQueue {
    var configuration = Configuration()
    configuration.busyMode = .timeout(30)
    return try DatabaseQueue(path: path, configuration: configuration)
}
