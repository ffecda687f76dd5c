import DiscordEmulator
import DiscordREST
import Logging

/// A client pointed at a fresh emulator, both torn down after `body`.
func withDiscord(
    emulator configuration: DiscordEmulator.Configuration = .init(),
    client adjust: @Sendable (inout DiscordClient<ContinuousClock>.Configuration) -> Void = { _ in },
    _ body: @Sendable (DiscordEmulator, DiscordClient<ContinuousClock>, DiscordEmulator.Endpoints) async throws -> Void
) async throws {
    let logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .error
        return logger
    }()
    try await DiscordEmulator.withRunning(configuration: configuration, logger: logger) { emulator in
        let endpoints = await emulator.endpoints()
        var clientConfiguration = DiscordClient<ContinuousClock>.Configuration(
            baseURL: endpoints.restURL, token: endpoints.botToken)
        adjust(&clientConfiguration)
        let client = DiscordClient(configuration: clientConfiguration, logger: logger)
        try await body(emulator, client, endpoints)
    }
}

extension DiscordForumThreadCreate {
    static func named(_ name: String, _ content: String, nonce: String? = nil) -> Self {
        DiscordForumThreadCreate(name: name, message: DiscordMessageCreate(content: content, nonce: nonce))
    }
}
