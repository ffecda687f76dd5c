import Deadlines
import Foundation
import NIOCore
import Synchronization
import ThreadDeskStore

/// The store (reachable, migrations applied or pending, the SQLite file writable), the listeners'
/// addresses and the secrets' lengths. Nothing here changes the store.
extension Doctor {
    public func storeChecks() async -> [DoctorCheck] {
        let url = configuration.storeURL
        if url.hasPrefix("sqlite://") {
            let path = String(url.dropFirst("sqlite://".count))
            let check = sqliteCheck(path: path)
            guard check.passed, FileManager.default.fileExists(atPath: path) else { return [check] }
            do {
                return [check, Self.outboxCheck(try SQLiteStore.outboxUsage(path: path), now: Date())]
            } catch {
                return [check, DoctorCheck("outbox", failed: "cannot be read (\(error))", fix: "check that the file is a ThreadDesk database")]
            }
        }
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            let (check, usage) = await postgresCheck(url: url)
            return check.passed ? [check, Self.outboxCheck(usage, now: Date())] : [check]
        }
        if url == "memory://" { return [DoctorCheck("store", passed: "memory:// (tests only: nothing is kept across restarts)")] }
        return [DoctorCheck("store", failed: "STORE_URL is none of sqlite://, postgres://, memory://", fix: "see STORE_URL in .env.example")]
    }

    func sqliteCheck(path: String) -> DoctorCheck {
        let files = FileManager.default
        guard files.fileExists(atPath: path) else {
            // The server creates the file and its folders: the nearest existing folder must be writable.
            var folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            while !files.fileExists(atPath: folder.path), folder.path != "/" { folder.deleteLastPathComponent() }
            return files.isWritableFile(atPath: folder.path)
                ? DoctorCheck("store", passed: "SQLite \(path) does not exist yet; the server creates it at start")
                : DoctorCheck("store", failed: "SQLite \(path) cannot be created (\(folder.path) is not writable)", fix: "make the folder writable for the server's user, or change STORE_URL")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard files.isWritableFile(atPath: path), files.isWritableFile(atPath: folder) else {
            return DoctorCheck(
                "store", failed: "SQLite \(path) or its folder is not writable (the WAL needs both)",
                fix: "give the server's user write access to \(folder) and the file")
        }
        do {
            let status = try SQLiteStore.migrationStatus(path: path)
            if !status.unknown.isEmpty {
                return DoctorCheck(
                    "store", failed: "SQLite \(path) was migrated by a newer ThreadDesk (\(status.unknown.joined(separator: ", ")))",
                    fix: "run that version, or restore a backup")
            }
            let pending = status.known.filter { !$0.applied }.map(\.name)
            return DoctorCheck(
                "store",
                passed: "SQLite \(path), writable; "
                    + (pending.isEmpty ? "all \(status.known.count) migrations applied" : "migrations pending (applied at start): \(pending.joined(separator: ", "))"))
        } catch {
            return DoctorCheck("store", failed: "SQLite \(path) cannot be read (\(error))", fix: "check that it is a ThreadDesk database, or restore a backup")
        }
    }

    /// How long the oldest message may wait for Discord before the doctor calls the outbox stuck.
    static let stuckOutbox: TimeInterval = 15 * 60

    /// What waits in the outbox (`usage`, nil before the outbox's migration ran), and whether it
    /// moves: a message waiting past `stuckOutbox` means Discord has not taken anything for as long.
    public static func outboxCheck(_ usage: OutboxUsage?, now: Date) -> DoctorCheck {
        guard let usage, usage.count > 0 else { return DoctorCheck("outbox", passed: "empty: every message accepted is in Discord") }
        let kib = (usage.bytes + 1023) / 1024
        let failed = usage.failed == 0 ? "" : "; \(usage.failed) refused by Discord for good (their users see why, and edit or delete them)"
        let waiting = usage.count - usage.failed
        guard let oldest = usage.oldest else { return DoctorCheck("outbox", passed: "nothing waiting (\(kib) KiB kept)" + failed) }
        let wait = max(0, Int(now.timeIntervalSince(oldest).rounded()))
        if Double(wait) > stuckOutbox {
            return DoctorCheck(
                "outbox", failed: "\(waiting) message(s) wait for Discord, the oldest for \(wait / 60) min" + failed,
                fix: "see the server's log (a stuck delivery is logged once a minute with Discord's answer) and threaddesk_outbox_failures_total on /metrics")
        }
        return DoctorCheck("outbox", passed: "\(waiting) message(s) waiting (\(kib) KiB), the oldest for \(wait) s" + failed)
    }

    func postgresCheck(url: String) async -> (DoctorCheck, OutboxUsage?) {
        let shown = ServerConfiguration.redactingPassword(url)
        let lastRefusal = Mutex<String?>(nil)
        do {
            let (found, usage) = try await withTimeout(options.storeTimeout, "PostgreSQL") {
                try await PostgresStore.withPools(url: url, logger: logger) { store in
                    // A busy database may not hand out a connection within the store's lease
                    // timeout: asked again until the doctor's own deadline, and the last refusal named.
                    while true {
                        do {
                            let found = try await store.schemaVersionFound()
                            // The outbox as this version keeps it: read once the schema is this version's.
                            return (found, found == PostgresStore.schemaVersion ? try await store.outboxUsage(of: nil) : nil)
                        } catch let error as StoreUnavailableError {
                            lastRefusal.withLock { $0 = "\(error)" }
                            try await Task.sleep(for: .milliseconds(250))
                        }
                    }
                }
            }
            let known = PostgresStore.schemaVersion
            if let found, found > known {
                return (DoctorCheck("store", failed: "PostgreSQL \(shown) holds schema \(found), newer than this ThreadDesk's \(known)", fix: "run that version, or restore a backup"), nil)
            }
            return (DoctorCheck(
                "store",
                passed: "PostgreSQL \(shown) reachable; "
                    + (found == known ? "schema \(known), up to date" : "schema \(found.map(String.init) ?? "none") → \(known) pending (applied at start)")), usage)
        } catch {
            let reason = lastRefusal.withLock { $0 }.map { "\(error); last: \($0)" } ?? "\(error)"
            return (DoctorCheck("store", failed: "PostgreSQL \(shown) cannot be reached (\(reason))", fix: "check STORE_URL, that the database runs and that this machine may connect"), nil)
        }
    }

    func listenerChecks() -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        func address(_ name: String, host: String, port: Int) -> DoctorCheck {
            do {
                _ = try SocketAddress.makeAddressResolvingHost(host, port: port)
                return DoctorCheck(name, passed: "\(host):\(port)")
            } catch {
                return DoctorCheck(name, failed: "\(host):\(port) is not an address of this machine's resolver (\(error))", fix: "set HOST/INTERNAL_HOST to an IP address (0.0.0.0 for every interface)")
            }
        }
        checks.append(address("listen.public", host: configuration.host, port: configuration.port))
        if let internalPort = configuration.internalPort {
            if internalPort == configuration.port && internalPort != 0 {
                checks.append(DoctorCheck("listen.internal", failed: "INTERNAL_PORT is PORT (\(internalPort))", fix: "give the internal listener a port of its own"))
            } else {
                checks.append(address("listen.internal", host: configuration.internalHost, port: internalPort))
            }
        }
        checks.append(metricsCheck())
        return checks
    }

    /// Where `/metrics` is served, and that anyone who reaches it needs more than the address:
    /// with several apps it names every app and its traffic.
    func metricsCheck() -> DoctorCheck {
        let token = configuration.metricsToken != nil
        guard let internalPort = configuration.internalPort else {
            return token
                ? DoctorCheck("metrics", passed: "on the public listener, behind METRICS_TOKEN")
                : DoctorCheck("metrics", passed: "not served: set INTERNAL_PORT (or METRICS_TOKEN) for Prometheus to read /metrics")
        }
        let everywhere = ["0.0.0.0", "::", "[::]", "*"].contains(configuration.internalHost)
        if everywhere && !token {
            return DoctorCheck(
                "metrics", warned: "/metrics is open to whatever reaches port \(internalPort) on every interface (INTERNAL_HOST \(configuration.internalHost))",
                fix: "set METRICS_TOKEN (Prometheus sends it as a bearer token), or INTERNAL_HOST to a private address")
        }
        return DoctorCheck("metrics", passed: "on the internal listener (\(configuration.internalHost):\(internalPort))" + (token ? ", behind METRICS_TOKEN" : ""))
    }

    /// The shortest APP_KEY worth the name: it is in every copy of the app, but a short one is guessed.
    public static let minimumAppKeyLength = 16

    func secretChecks() -> [DoctorCheck] {
        var short: [String] = []
        if configuration.appKey.count < Self.minimumAppKeyLength { short.append("APP_KEY (at least \(Self.minimumAppKeyLength))") }
        let minimum = ServerConfiguration.minimumSecretLength
        if let secret = configuration.gatewaySecret, secret.utf8.count < minimum { short.append("GATEWAY_SECRET (at least \(minimum))") }
        if let secret = configuration.identitySecret, secret.utf8.count < minimum { short.append("IDENTITY_SECRET (at least \(minimum))") }
        if let token = configuration.metricsToken, token.utf8.count < minimum { short.append("METRICS_TOKEN (at least \(minimum))") }
        guard short.isEmpty else {
            return [DoctorCheck("secrets", failed: "too short: \(short.joined(separator: ", "))", fix: "generate them with openssl rand -hex 24")]
        }
        let set = ["APP_KEY"] + (configuration.gatewaySecret == nil ? [] : ["GATEWAY_SECRET"]) + (configuration.identitySecret == nil ? [] : ["IDENTITY_SECRET"])
            + (configuration.metricsToken == nil ? [] : ["METRICS_TOKEN"])
        return [DoctorCheck("secrets", passed: "\(set.joined(separator: ", ")) long enough")]
    }
}
