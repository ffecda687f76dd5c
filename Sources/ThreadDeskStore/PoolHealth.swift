import Synchronization

/// Whether a connection pool answered lately. postgres-nio's wait for a lease has no deadline of
/// its own (its circuit breaker opens after a minute), so while the database may be away every
/// operation first leases under `PostgresStore.leaseTimeout`; once one succeeds, operations lease
/// directly until a query fails in a way that looks like the database going away (a connection
/// error, a query the watchdog abandoned, a lease that timed out).
final class PoolHealth: Sendable {
    private let answering = Atomic<Bool>(false)

    var isAnswering: Bool { answering.load(ordering: .relaxed) }

    func answered() {
        if !answering.load(ordering: .relaxed) { answering.store(true, ordering: .relaxed) }
    }

    func failed() {
        if answering.load(ordering: .relaxed) { answering.store(false, ordering: .relaxed) }
    }
}
