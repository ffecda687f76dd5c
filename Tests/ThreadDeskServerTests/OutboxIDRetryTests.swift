import DiscordREST
import Synchronization
import Testing
@testable import ThreadDeskStore
import HTTPTypes
import ThreadDeskWire
@testable import ThreadDeskServer

/// Two replicas that drew the same worker bits may make the same message id in the same
/// millisecond; the store refuses the second (`OutboxIDTaken`). The send is tried again with new
/// ids, not answered 500; past three refusals it is a 503 the client retries.
@Suite("Outbox ids taken by another replica")
struct OutboxIDRetryTests {
    @Test func aTakenIDIsTriedAgainWithNewIDs() async throws {
        let attempts = Mutex(0)
        let result = try await OutboxIntake.retryingTakenIDs { () async throws -> Int in
            let attempt = attempts.withLock { $0 += 1; return $0 }
            if attempt < 3 { throw OutboxIDTaken(id: Snowflake(UInt64(attempt))) }
            return attempt
        }
        #expect(result == 3)
    }

    @Test func afterThreeRefusalsTheClientIsToldToComeBack() async throws {
        let attempts = Mutex(0)
        await #expect(throws: OutboxIDTaken.self) { () async throws -> Int in
            try await OutboxIntake.retryingTakenIDs { () async throws -> Int in
                attempts.withLock { $0 += 1 }
                throw OutboxIDTaken(id: Snowflake(1))
            }
        }
        #expect(attempts.withLock { $0 } == OutboxIntake.maxIDAttempts)
        let answer = ErrorMiddleware.apiError(for: OutboxIDTaken(id: Snowflake(1)))
        #expect(answer.status == .serviceUnavailable && answer.code == .busy && answer.retryAfterSeconds == 1)
        // Other errors are not retried.
        let other = Mutex(0)
        await #expect(throws: CancellationError.self) { () async throws -> Int in
            try await OutboxIntake.retryingTakenIDs { () async throws -> Int in
                other.withLock { $0 += 1 }
                throw CancellationError()
            }
        }
        #expect(other.withLock { $0 } == 1)
    }
}
