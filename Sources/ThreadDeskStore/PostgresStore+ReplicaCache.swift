import Deadlines
import DiscordREST
import Foundation
import Logging
import PostgresNIO
import Synchronization
import ThreadDeskCore

/// The replica's memory of users, mirror threads and mirror pages (`ReplicaCache`): the words of
/// change every write sends, the listener that hears them, the pinger behind each read's barrier.
extension PostgresStore {
    /// Word of a change, to send in the writing transaction (a `pg_notify` call).
    enum Change {
        case user(UserID)
        case thread(Snowflake)

        var line: String {
            switch self {
            case .user(let id): "u " + id.rawValue
            case .thread(let id): "t " + id.description
            }
        }

        /// The payload for `changes`: one line each, or "*" (everything) past NOTIFY's size limit.
        static func payload(_ changes: [Change]) -> String {
            let text = changes.map(\.line).joined(separator: "\n")
            return text.utf8.count <= PostgresStore.maximumAnnouncement ? text : "*"
        }
    }

    /// Hears the words of change until cancelled, listening again after a loss (the memory is
    /// cleared on each loss and each new start: words may have been missed in between).
    func listenForChanges() async {
        var failures = 0
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: changeChannel) { notifications in
                        failures = 0
                        replicaCache.listening(on: connection)
                        // Before the connection goes back to the pool: no ping is sent on it after.
                        defer { replicaCache.lost() }
                        for try await notification in notifications { arrived(notification.payload) }
                    }
                }
            } catch {
                if !Task.isCancelled {
                    failures += 1
                    logger.warning("Lost the listener of changes; reads go to the database until it is back", metadata: ["error": "\(error)"])
                }
            }
            replicaCache.lost()
            if Task.isCancelled { return }
            try? await Task.sleep(for: .milliseconds(min(10_000, 250 << min(failures, 6))))
        }
    }

    private func arrived(_ payload: String) {
        replicaCache.held.withLock { held in
            if held != nil { held?.append(payload) } else { heard(payload) }
        }
    }

    private func heard(_ payload: String) {
        var users: [UserID] = []
        var threads: [Snowflake] = []
        for line in payload.split(separator: "\n") {
            if line == "*" { return replicaCache.changed(users: [], threads: [], everything: true) }
            let parts = line.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2 else { continue }
            switch parts[0] {
            case "u": if let id = UserID(storageKey: String(line.dropFirst(2))) { users.append(id) }
            case "t": if let id = Snowflake(String(parts[1])) { threads.append(id) }
            case "p":
                if parts.count == 3, parts[1] == replica, let number = UInt64(parts[2]) { replicaCache.pingCameBack(number) }
                continue
            default: continue
            }
        }
        if !users.isEmpty || !threads.isEmpty { replicaCache.changed(users: users, threads: threads, everything: false) }
    }

    /// Sends a ping when a read waits for one, on the listener's own connection, and waits for it
    /// to come back (one on its way at a time: a ping serves every read that began before it was
    /// sent). Sleeps while nobody reads.
    func sendPings() async {
        while !Task.isCancelled {
            guard let (number, connection) = replicaCache.nextPing() else {
                await replicaCache.pingWanted.wait()
                continue
            }
            do {
                try await connection.rows(
                    "SELECT pg_notify(\(changeChannel), \("p \(replica) \(number)"))", logger: logger, deadline: ReplicaCache.pingTimeout)
            } catch {
                replicaCache.pingLost(number)
                // The listener's connection is failing: no faster pings meanwhile.
                await replicaCache.pingWanted.wait(upTo: .milliseconds(100))
                continue
            }
            let deadline = ContinuousClock.now.advanced(by: ReplicaCache.pingTimeout)
            while !replicaCache.hasReturned(number) {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero, !Task.isCancelled else {
                    replicaCache.pingLost(number)
                    break
                }
                await replicaCache.pingReturned.wait(upTo: left)
            }
        }
    }

    /// `read` from memory when the replica can vouch for it, else from the database (kept for next time).
    func remembered<T>(
        _ lookup: (ReplicaCache) -> T?, keep: (ReplicaCache, T, ReplicaCache.Fill) -> Void, read: () async throws -> T
    ) async throws -> T {
        guard await replicaCache.barrier() else { return try await read() }
        if let found = lookup(replicaCache) { return found }
        guard let fill = replicaCache.startFill() else { return try await read() }
        let value = try await read()
        keep(replicaCache, value, fill)
        return value
    }

    /// Tests only: while holding, what the listener hears waits, in order, as if it came late;
    /// released, it is taken in.
    public func holdNotifications(_ hold: Bool) {
        replicaCache.held.withLock { held in
            if hold {
                held = held ?? []
            } else {
                for payload in held ?? [] { heard(payload) }
                held = nil
            }
        }
    }

    /// Tests only: how many of the held notifications are this replica's own pings.
    public var heldPings: Int {
        replicaCache.held.withLock { held in (held ?? []).filter { $0.hasPrefix("p \(replica) ") }.count }
    }

    /// The oldest memory a replica answers from: what a word of change lost unnoticed can cost.
    public static var memoryMaximumAge: Duration { ReplicaCache.maximumAge }

    /// Tests only: words of change from now on are dropped as if lost (pings still come back).
    public func dropWordsOfChange(_ drop: Bool) { replicaCache.dropsChanges.store(drop, ordering: .relaxed) }

    /// Reads answered from memory and reads that found nothing there (tests).
    public var replicaCacheCounts: (hits: Int, misses: Int, entries: Int) {
        (replicaCache.hits, replicaCache.misses, replicaCache.entries)
    }
}
