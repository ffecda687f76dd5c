import ArgumentParser
import AssistEmulator
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Runs the assist provider emulator alone and prints one JSON line telling clients how to reach it.
@main
struct AssistEmulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assist-emulator", abstract: "A fake OpenAI-compatible chat-completions provider on loopback.")

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on; 0 picks a free one.") var port = 0
    @Option(help: "A model it serves; more than once for several (the first is reported). Default: test-model.")
    var model: [String] = []
    @Option(help: "Refuse requests without `Authorization: Bearer <key>`; none required by default.") var apiKey: String?

    func run() async throws {
        var logger = Logger(label: "assist-emulator")
        logger.logLevel = .warning
        var configuration = AssistEmulator.Configuration()
        configuration.host = host
        configuration.port = port
        if !model.isEmpty { configuration.models = model }
        configuration.apiKey = apiKey
        let emulator = AssistEmulator(configuration: configuration, logger: logger)
        let group = ServiceGroup(services: [emulator], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        async let running: Void = group.run()
        let endpoints = await emulator.endpoints()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        FileHandle.standardOutput.write(try encoder.encode(endpoints) + Data("\n".utf8))
        try await running
    }
}
