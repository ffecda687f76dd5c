import Deadlines
import Logging
import ServiceLifecycle
import Synchronization
import ThreadDeskStore

/// The store's migration, before either listener serves a request and before any background
/// service touches the store: no request meets an old schema, and none waits on a migration.
/// Whoever comes first migrates, the rest wait their turn (cancellably) and find it done. A
/// database that is away at start is tried again every second until `deadline` has passed; then
/// the start fails with the store's last error (the supervisor restarts the process).
final class StoreMigration: Sendable {
    private let store: any StoreLifecycle
    private let deadline: Duration
    private let logger: Logger
    private let turn: KeyedFIFOLock<Int>
    private let done = Atomic<Bool>(false)

    init(store: any StoreLifecycle, deadline: Duration = .seconds(60), logger: Logger) {
        self.store = store
        self.deadline = deadline
        self.logger = logger
        turn = KeyedFIFOLock<Int>(defaultTimeout: deadline + .seconds(5))
    }

    func ensure() async throws {
        if done.load(ordering: .acquiring) { return }
        try await turn.withLock(0) {
            if done.load(ordering: .acquiring) { return }
            let end = ContinuousClock.now.advanced(by: deadline)
            while true {
                do {
                    try await store.migrate()
                    break
                } catch let error as StoreUnavailableError where ContinuousClock.now.advanced(by: .seconds(1)) < end {
                    logger.warning("The store cannot be migrated yet; trying again", metadata: ["error": "\(error)"])
                    try await cancellableSleep(for: .seconds(1))
                }
            }
            done.store(true, ordering: .releasing)
        }
    }
}

extension StoreMigration {
    /// The listeners' prelude: shutdown during a migration that waits on an absent database ends
    /// the wait (the listener then opens and closes at once, as the rest shuts down).
    func beforeServing() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await self.ensure() }
        } catch where Task.isShuttingDownGracefully {
            return
        }
    }
}

/// A background service that starts once the store is migrated (or ends, if shutdown comes first).
struct AfterMigration: Service, CustomStringConvertible {
    let service: any Service
    let migration: StoreMigration

    var description: String { "\(service) (after the migration)" }

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await migration.ensure() }
        } catch where Task.isShuttingDownGracefully {
            return
        }
        try await service.run()
    }
}
