import DiscordEmulator
import DiscordREST
import Logging

/// A client pointed at a fresh emulator, both on `clock` (the emulator's rate-limit windows and
/// the client's waits and budget), both torn down after `body`.
func withDiscord<C: Clock>(
    clock: C,
    emulator configuration: DiscordEmulator.Configuration = .init(),
    client adjust: @Sendable (inout DiscordClient<C>.Configuration) -> Void = { _ in },
    _ body: @Sendable (DiscordEmulator, DiscordClient<C>, DiscordEmulator.Endpoints) async throws -> Void
) async throws where C.Duration == Duration {
    let logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .error
        return logger
    }()
    var configuration = configuration
    configuration.clock = .init(clock)
    try await DiscordEmulator.withRunning(configuration: configuration, logger: logger) { emulator in
        let endpoints = await emulator.endpoints()
        var clientConfiguration = DiscordClient<C>.Configuration(baseURL: endpoints.restURL, token: endpoints.botToken)
        adjust(&clientConfiguration)
        let client = DiscordClient(configuration: clientConfiguration, clock: clock, logger: logger)
        try await body(emulator, client, endpoints)
    }
}

/// The same on real time.
func withDiscord(
    emulator configuration: DiscordEmulator.Configuration = .init(),
    client adjust: @Sendable (inout DiscordClient<ContinuousClock>.Configuration) -> Void = { _ in },
    _ body: @Sendable (DiscordEmulator, DiscordClient<ContinuousClock>, DiscordEmulator.Endpoints) async throws -> Void
) async throws {
    try await withDiscord(clock: ContinuousClock(), emulator: configuration, client: adjust, body)
}

extension DiscordForumThreadCreate {
    static func named(_ name: String, _ content: String, nonce: String? = nil) -> Self {
        DiscordForumThreadCreate(name: name, message: DiscordMessageCreate(content: content, nonce: nonce))
    }
}
