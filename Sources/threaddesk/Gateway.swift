import ArgumentParser
import DiscordGateway
import ThreadDeskServer

/// The gateway daemon: keeps the Discord WebSocket open and forwards the support forum's events
/// to the server. It keeps no database. `runGatewayDaemon` does the work (the `threaddesk-gateway`
/// executable runs the same); its wiring is `buildGatewayServices`, which its tests start too.
struct Gateway: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Keep the Discord gateway open and forward forum events to the server (needs DISCORD_TOKEN, DISCORD_FORUM_CHANNEL_ID, SERVER_URL, GATEWAY_SECRET).")

    @Option(help: "The .env file to read; variables already in the environment win.") var envFile = ".env"

    func run() async throws {
        let status = try await runGatewayDaemon(environment: DotEnv.environment(path: envFile))
        if status != 0 { throw ExitCode(status) }
    }
}
