import Foundation
import Synchronization
import Logging
import Testing
import TestSupport
import ThreadDeskStore
@testable import ThreadDeskServer

@Suite("Migrations before serving", .timeLimit(.minutes(1)))
struct StoreMigrationTests {
    /// A database that never comes fails the start with the store's error once the deadline has
    /// passed; the start never waits for it for good.
    @Test func aDatabaseThatNeverComesFailsTheStartAfterTheDeadline() async throws {
        // Nothing listens on port 1: every attempt is refused (or leased out after 5 s).
        let store = try PostgresStore(url: "postgres://threaddesk@127.0.0.1:1/threaddesk", logger: testLogger())
        let migration = StoreMigration(store: store, deadline: .seconds(2), logger: testLogger())
        let started = ContinuousClock.now
        await #expect(throws: StoreUnavailableError.self) { try await migration.ensure() }
        // One attempt past the deadline at most (an attempt gives up within its 5 s lease).
        #expect(started.duration(to: .now) < .seconds(30))
    }

    /// Every caller waits for the one migration; once done, it is not run again.
    @Test func theMigrationRunsOnceForEveryCaller() async throws {
        let store = CountingStore()
        let migration = StoreMigration(store: store, logger: testLogger())
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { try await migration.ensure() } }
            // The callers come while the one migration is under way.
            try await store.begun.wait(for: "the migration begun") { $0 == 1 }
            store.finish.update { $0 = true }
            try await group.waitForAll()
        }
        #expect(store.begun.value == 1)
        try await migration.ensure()
        #expect(store.migrations.withLock { $0 } == 1)
    }
}

/// A store lifecycle that counts its migrations (a real store's migration is idempotent, so only
/// a count tells whether it ran again).
private final class CountingStore: StoreLifecycle {
    let migrations = Mutex(0)
    /// Migrations begun; the first holds until the test lets it finish (`finish`).
    let begun = Watched(0)
    let finish = Watched(false)

    func migrate() async throws {
        begun.update { $0 += 1 }
        try await finish.wait(for: "the test to let the migration finish") { $0 }
        migrations.withLock { $0 += 1 }
    }

    func checkReachable() async throws {}
}
