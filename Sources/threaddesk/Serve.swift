import ArgumentParser
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import ThreadDeskServer
import UnixSignals

/// The HTTP API, configured from the environment and `.env`.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the HTTP API (configuration from the environment and .env).")

    @Option(help: "The .env file to read; variables already in the environment win.") var envFile = ".env"
    @Flag(help: "Also keep the Discord gateway open in this process (single-machine setup).") var gateway = false

    func run() async throws {
        let configuration: ServerConfiguration
        do {
            configuration = try ServerConfiguration(environment: DotEnv.environment(path: envFile))
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(78)
        }
        var logger = Logger(label: "threaddesk")
        logger.logLevel = configuration.logLevel
        if configuration.identitySecret == nil {
            logger.warning(
                "IDENTITY_SECRET is not set: a client may choose its own userId, and the first to claim an id owns it once it is used (a second device cannot join it). Set it if your app has a backend that can sign user ids.")
        }
        let store = try makeStore(url: configuration.storeURL, logger: logger)
        let app = buildApplication(configuration: configuration, store: store, inProcessGateway: gateway, logger: logger)
        let group = buildServiceGroup(
            [app], grace: configuration.shutdownGrace, cancelGrace: configuration.shutdownCancelGrace, logger: logger)
        try await group.run()
    }
}
