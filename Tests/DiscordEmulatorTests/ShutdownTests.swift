import DiscordEmulator
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import TestSupport
import Testing

/// The emulator never waits forever on a client that connected and went quiet. Before the guard,
/// its graceful shutdown waited on such a connection with no deadline; that hung the Swift suite
/// about one run in ten (a request cancelled while AsyncHTTPClient opened its connection leaves
/// exactly that connection in the pool).
@Suite("Discord emulator shutdown", .timeLimit(.minutes(2)))
struct ShutdownTests {
    private static let logger: Logger = {
        var logger = Logger(label: "shutdown-test")
        logger.logLevel = .critical
        return logger
    }()

    /// A TCP connection to `port` that sends nothing.
    static func silentConnection(to port: Int) async throws -> any Channel {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
    }

    static func port(of endpoints: DiscordEmulator.Endpoints) throws -> Int {
        try #require(Int(endpoints.restURL.split(separator: ":").last!.split(separator: "/").first!))
    }

    @Test func shutdownEndsWithASilentConnectionOpen() async throws {
        var configuration = DiscordEmulator.Configuration()
        // Far past the wait below: only the shutdown itself can close the silent connection in time.
        configuration.silentConnectionTimeout = .seconds(3600)
        let emulator = DiscordEmulator(configuration: configuration, logger: Self.logger)
        let group = ServiceGroup(services: [emulator], gracefulShutdownSignals: [], logger: Self.logger)
        let running = Task { try await group.run() }
        let silent = try await Self.silentConnection(to: try Self.port(of: await emulator.endpoints()))
        let (finished, finish) = AsyncStream.makeStream(of: Void.self)
        let watcher = Task {
            _ = await running.result
            finish.yield()
        }
        await group.triggerGracefulShutdown()
        // Generous, for a busy machine: a shutdown that waits on the connection waits an hour.
        let stopped = await yields(finished, within: .seconds(120))
        #expect(stopped, "the emulator's shutdown waited on a connection that never sent a request")
        // Let a hung emulator go, so a failure is a failure and not a hang.
        try? await silent.close()
        _ = await running.result
        watcher.cancel()
        try await silent.closeFuture.get()
        #expect(!silent.isActive)
    }

    @Test func aConnectionThatNeverSpeaksIsClosed() async throws {
        var configuration = DiscordEmulator.Configuration()
        configuration.silentConnectionTimeout = .milliseconds(200)
        try await DiscordEmulator.withRunning(configuration: configuration, logger: Self.logger) { emulator in
            let silent = try await Self.silentConnection(to: try Self.port(of: await emulator.endpoints()))
            // Generous, for a busy machine: without the guard it stays open for good.
            let wasClosed = await silent.closes(within: .seconds(120))
            #expect(wasClosed, "a silent connection stayed open past the emulator's timeout")
            if !wasClosed { try? await silent.close() }
        }
    }
}
