import ArgumentParser
import DiscordGateway
import Foundation
import Logging
import ServiceLifecycle
import ThreadDeskServer
import UnixSignals

/// The gateway daemon: keeps the Discord WebSocket open and forwards the support forum's events
/// to the server. It keeps no database.
struct Gateway: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Keep the Discord gateway open and forward forum events to the server (needs DISCORD_TOKEN, DISCORD_FORUM_CHANNEL_ID, SERVER_URL, GATEWAY_SECRET).")

    @Option(help: "The .env file to read; variables already in the environment win.") var envFile = ".env"

    func run() async throws {
        let environment = DotEnv.environment(path: envFile)
        let required = ["DISCORD_TOKEN", "DISCORD_FORUM_CHANNEL_ID", "SERVER_URL", "GATEWAY_SECRET"]
        let missing = required.filter { (environment[$0] ?? "").isEmpty }
        if let secret = environment["GATEWAY_SECRET"], !secret.isEmpty, secret.utf8.count < ServerConfiguration.minimumSecretLength {
            FileHandle.standardError.write(Data(
                "threaddesk gateway cannot start; GATEWAY_SECRET must be at least \(ServerConfiguration.minimumSecretLength) characters.\n".utf8))
            throw ExitCode(78)
        }
        guard missing.isEmpty else {
            FileHandle.standardError.write(Data("threaddesk gateway cannot start; configuration missing: \(missing.joined(separator: ", ")).\n".utf8))
            throw ExitCode(78)
        }
        var logger = Logger(label: "threaddesk.gateway")
        logger.logLevel = environment["LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0.lowercased()) } ?? .info
        let forwarder = HTTPEventForwarder(
            configuration: .init(serverURL: environment["SERVER_URL"]!, secret: environment["GATEWAY_SECRET"]!), logger: logger)
        let connection = GatewayConnection(
            configuration: .init(
                token: environment["DISCORD_TOKEN"]!, forumChannelID: environment["DISCORD_FORUM_CHANNEL_ID"]!,
                discordAPIURL: environment["DISCORD_API_URL"] ?? "https://discord.com/api/v10"),
            sink: forwarder, logger: logger)
        // Events already read get the connection's drain time to reach the server, then stop.
        let group = buildServiceGroup([forwarder, connection], grace: .seconds(10), cancelGrace: .seconds(5), logger: logger)
        do {
            try await group.run()
        } catch let error as GatewayFatalError {
            FileHandle.standardError.write(Data("threaddesk gateway stopped: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
