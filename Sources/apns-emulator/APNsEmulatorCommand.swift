import APNsEmulator
import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Runs the APNs emulator alone and prints one JSON line telling clients how to reach it.
@main
struct APNsEmulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-emulator", abstract: "A fake APNs (HTTP/2 over TLS, token auth) on loopback.")

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on; 0 picks a free one.") var port = 0
    @Option(help: "An app's bundle id (apns-topic); more than once for several apps (the first is reported as topic).")
    var topic: [String] = []
    @Option(help: "Folder for the generated .p8 key and CA certificate; a new temporary one by default.") var directory: String?

    struct Output: Encodable {
        var url: String
        var deliveriesURL: String
        var topic: String
        var keyID: String
        var teamID: String
        var privateKeyPath: String
        var caCertificatePath: String
    }

    func run() async throws {
        var logger = Logger(label: "apns-emulator")
        logger.logLevel = .warning
        var configuration = APNsEmulator.Configuration()
        configuration.host = host
        configuration.port = port
        configuration.topic = topic.first ?? configuration.topic
        configuration.otherTopics = Array(topic.dropFirst())
        let emulator = try APNsEmulator(configuration: configuration, logger: logger)
        let group = ServiceGroup(services: [emulator], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        async let running: Void = group.run()
        let credentials = await emulator.credentials()
        let folder = URL(fileURLWithPath: directory ?? NSTemporaryDirectory()).appendingPathComponent(
            directory == nil ? "apns-emulator-\(UUID().uuidString)" : "")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let keyPath = folder.appendingPathComponent("AuthKey_\(credentials.keyID).p8")
        let caPath = folder.appendingPathComponent("apns-emulator-ca.pem")
        try credentials.privateKeyPEM.write(to: keyPath, atomically: true, encoding: .utf8)
        try credentials.caCertificatePEM.write(to: caPath, atomically: true, encoding: .utf8)
        let output = Output(
            url: credentials.url, deliveriesURL: credentials.url + "/_emulator/deliveries", topic: credentials.topic,
            keyID: credentials.keyID, teamID: credentials.teamID, privateKeyPath: keyPath.path, caCertificatePath: caPath.path)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        FileHandle.standardOutput.write(try encoder.encode(output) + Data("\n".utf8))
        try await running
    }
}
