import Foundation
import Logging
import NIOCore
import PostgresNIO
import Testing
import TestSupport
@testable import ThreadDeskStore

/// The one watch over every query in flight, standing in for postgres-nio on a query it never
/// answers (one sent on a connection that is going away).
@Suite("The query watchdog", .enabled(if: postgresIsAvailable), .timeLimit(.minutes(1)))
struct QueryWatchdogTests {
    @Test func aQueryThatNeverAnswersIsAbandonedAtItsDeadline() async throws {
        try await withConnection { connection in
            let watchdog = QueryWatchdog()
            let never = connection.eventLoop.makePromise(of: PostgresQueryResult.self)
            defer { never.fail(ChannelError.ioOnClosedChannel) }
            let error = await #expect(throws: StoreUnavailableError.self) {
                try await watchdog.rows(of: never.futureResult, on: connection, limit: .milliseconds(200))
            }
            #expect("\(String(describing: error))".contains("no answer within"))
            #expect(watchdog.inFlight == 0)
        }
    }

    @Test func aQueryOnAConnectionThatClosesIsAbandonedSoonAfter() async throws {
        try await withConnection { connection in
            let watchdog = QueryWatchdog()
            let never = connection.eventLoop.makePromise(of: PostgresQueryResult.self)
            defer { never.fail(ChannelError.ioOnClosedChannel) }
            // Closed a moment after the query is waited on: a timer on the connection's event loop.
            let moment = connection.eventLoop.scheduleTask(in: .milliseconds(100)) {}
            async let closing: Void = { try? await moment.futureResult.get(); try? await connection.close() }()
            // Far longer than the test's own time limit: only the close can end it.
            let error = await #expect(throws: StoreUnavailableError.self) {
                try await watchdog.rows(of: never.futureResult, on: connection, limit: .seconds(3600))
            }
            await closing
            #expect("\(String(describing: error))".contains("the connection closed"))
        }
    }

    /// Queries that answer cost the watch no wake-up each: it sleeps until a deadline.
    @Test func theWatchSleepsThroughQueriesThatAnswer() async throws {
        try await withConnection { connection in
            let watchdog = QueryWatchdog()
            for index in 0..<200 {
                let result: EventLoopFuture<PostgresQueryResult> = connection.query("SELECT \(index)", logger: Self.logger)
                let rows = try await watchdog.rows(of: result, on: connection, limit: .seconds(600))
                #expect(try rows.first?.decode(Int.self) == index)
            }
            #expect(watchdog.inFlight == 0)
            // It looked once when it started, then slept (until the deadlines, ten minutes away).
            #expect(watchdog.looks <= 2, "\(watchdog.looks) looks for 200 queries")
        }
    }

    /// With nothing in flight past the last deadline the watch ends: nothing ticks while idle.
    @Test func theWatchEndsWhenNothingIsInFlight() async throws {
        try await withConnection { connection in
            let watchdog = QueryWatchdog()
            let result: EventLoopFuture<PostgresQueryResult> = connection.query("SELECT 1", logger: Self.logger)
            _ = try await watchdog.rows(of: result, on: connection, limit: .milliseconds(200))
            try await eventually("the watch ended") { !watchdog.isRunning }
            let looks = watchdog.looks
            #expect(watchdog.inFlight == 0)
            // Started, woke at the deadline and ended: no tick in between.
            #expect(looks <= 3, "\(looks) looks")
        }
    }

    static let logger: Logger = {
        var logger = Logger(label: "watchdog-test")
        logger.logLevel = .critical
        return logger
    }()

    private func withConnection(_ body: (PostgresConnection) async throws -> Void) async throws {
        let url = try #require(URLComponents(string: ProcessInfo.processInfo.environment["THREADDESK_POSTGRES_URL"] ?? ""))
        let configuration = PostgresConnection.Configuration(
            host: url.host ?? "127.0.0.1", port: url.port ?? 5432, username: url.user ?? "postgres", password: url.password,
            database: String(url.path.dropFirst()), tls: .disable)
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: Self.logger)
        do {
            try await body(connection)
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()
    }
}
