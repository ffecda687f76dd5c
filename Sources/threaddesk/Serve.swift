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
        let (configuration, logger) = try resolve()
        let catalog = configuration.catalog
        for app in catalog.apps where app.identitySecret == nil {
            let setting = catalog.isShared ? "identitySecret of app \(app.id) (APPS_FILE)" : "IDENTITY_SECRET"
            logger.warning(
                "\(setting) is not set: a client may choose its own userId, and the first to claim an id owns it once it is used (a second device cannot join it). Set it if your app has a backend that can sign user ids.")
        }
        let store = try makeStore(url: configuration.storeURL, logger: logger)
        let app = buildApplication(configuration: configuration, store: store, inProcessGateway: gateway, logger: logger)
        let group = buildServiceGroup(
            [app], grace: configuration.shutdownGrace, cancelGrace: configuration.shutdownCancelGrace, logger: logger)
        try await group.run()
    }
}

extension Serve {
    /// The configuration, read once from the environment and fitted to this process (its
    /// open-file limit), and the logger it asks for; constant from here on. A configuration
    /// error ends the process with 78 (EX_CONFIG), every problem named.
    func resolve() throws -> (ServerConfiguration, Logger) {
        var configuration: ServerConfiguration
        do {
            configuration = try ServerConfiguration(environment: DotEnv.environment(path: envFile))
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(78)
        }
        var logger = Logger(label: "threaddesk")
        logger.logLevel = configuration.logLevel
        configuration.live.maxStreams = fitStreams(configuration.live.maxStreams, logger: logger)
        return (configuration, logger)
    }
}

/// Lifts the process's open-file limit as far as the system allows and keeps `LIVE_MAX_STREAMS`
/// within it: past the limit the process could not accept any connection, polls included.
func fitStreams(_ configured: Int, logger: Logger) -> Int {
    guard let limit = OpenFileLimit.raiseToHard() else { return configured }
    let capacity = limit.streamCapacity(configured: configured)
    if capacity < configured {
        logger.warning(
            "This process may open \(limit.soft) files, so it holds at most \(capacity) event streams, not LIVE_MAX_STREAMS=\(configured); more are answered 503 and retried. Raise the hard limit (LimitNOFILE= in systemd, --ulimit nofile= in Docker) to LIVE_MAX_STREAMS + \(OpenFileLimit.reserve).")
    } else {
        logger.info("Open-file limit", metadata: ["soft": "\(limit.soft)", "hard": "\(limit.hard)"])
    }
    return capacity
}
