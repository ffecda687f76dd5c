import ArgumentParser
import DiscordGateway
import Foundation
import Logging
import ServiceLifecycle
import ThreadDeskServer
import UnixSignals

/// The gateway daemon: keeps the Discord WebSocket open and forwards the support forum's events
/// to the server. It keeps no database. Reading settings and starting things is all it does here:
/// the wiring is `buildGatewayServices`, which its tests start too.
struct Gateway: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Keep the Discord gateway open and forward forum events to the server (needs DISCORD_TOKEN, DISCORD_FORUM_CHANNEL_ID, SERVER_URL, GATEWAY_SECRET).")

    @Option(help: "The .env file to read; variables already in the environment win.") var envFile = ".env"

    func run() async throws {
        let settings: GatewayDaemonConfiguration
        do {
            settings = try GatewayDaemonConfiguration(environment: DotEnv.environment(path: envFile))
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(78)
        }
        var logger = Logger(label: "threaddesk.gateway")
        logger.logLevel = settings.logLevel
        let daemon = buildGatewayServices(configuration: settings, logger: logger)
        // Events already read get the connection's drain time to reach the server, then stop.
        let group = buildServiceGroup(daemon.services, grace: .seconds(10), cancelGrace: .seconds(5), logger: logger)
        do {
            try await group.run()
        } catch let error as GatewayFatalError {
            FileHandle.standardError.write(Data("threaddesk gateway stopped: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
