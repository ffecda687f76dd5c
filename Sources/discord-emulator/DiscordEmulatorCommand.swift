import ArgumentParser
import DiscordEmulator
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Runs the Discord emulator alone and prints one JSON line telling clients where it is.
@main
struct DiscordEmulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discord-emulator", abstract: "A fake Discord (REST v10, gateway v10, control API) on loopback.")

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on; 0 picks a free one.") var port = 0
    @Option(help: "Heartbeat interval sent in HELLO, in milliseconds.") var heartbeatInterval = 41_250
    @Option(help: "Scale every rate-limit window by this factor (1 = Discord's).") var windowScale = 1.0
    @Option(help: "Posts allowed per channel per window.") var messagePostLimit = 5

    func run() async throws {
        var logger = Logger(label: "discord-emulator")
        logger.logLevel = .warning
        var configuration = DiscordEmulator.Configuration.fastWindows(scale: windowScale)
        configuration.host = host
        configuration.port = port
        configuration.heartbeatInterval = .milliseconds(heartbeatInterval)
        configuration.messagePostLimit.limit = messagePostLimit
        let emulator = DiscordEmulator(configuration: configuration, logger: logger)
        let group = ServiceGroup(services: [emulator], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        async let running: Void = group.run()
        let endpoints = await emulator.endpoints()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Written straight to the file descriptor so a parent reading a pipe sees it at once.
        FileHandle.standardOutput.write(try encoder.encode(endpoints) + Data("\n".utf8))
        try await running
    }
}
