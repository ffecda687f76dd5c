import ArgumentParser
import DiscordGateway
import Foundation
import ThreadDeskServer

/// The gateway daemon: keeps the Discord WebSocket open and forwards the support forum's events
/// to the server. It keeps no database. `runGatewayDaemon` does the work (the `threaddesk-gateway`
/// executable runs the same); its wiring is `buildGatewayServices`, which its tests start too.
///
/// When `threaddesk-gateway` is installed beside this binary (the Docker image and the release
/// builds have both), the command becomes that process: the same daemon without the server, the
/// stores and the emulators mapped in, in 29 MiB instead of 44 (bench/RESULTS.md). Deployments that
/// say `threaddesk gateway` (compose, Fly.io, systemd) get the small one without a change.
struct Gateway: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Keep the Discord gateway open and forward forum events to the server (needs DISCORD_TOKEN, DISCORD_FORUM_CHANNEL_ID, SERVER_URL, GATEWAY_SECRET).")

    @Option(help: "The .env file to read; variables already in the environment win.") var envFile = ".env"

    @Flag(help: "Run the daemon in this process even when threaddesk-gateway is installed beside it.")
    var inProcess = false

    func run() async throws {
        if !inProcess, let daemon = Self.installedDaemon() {
            // Only returns when the exec failed; then the daemon runs here as before.
            let arguments = [daemon, "--env-file", envFile]
            var pointers = arguments.map { strdup($0) } + [nil]
            execv(daemon, &pointers)
            let reason = String(cString: strerror(errno))
            for pointer in pointers { free(pointer) }
            FileHandle.standardError.write(Data("cannot start \(daemon) (\(reason)); running the gateway in process\n".utf8))
        }
        let status = try await runGatewayDaemon(environment: DotEnv.environment(path: envFile))
        if status != 0 { throw ExitCode(status) }
    }

    /// `threaddesk-gateway` in this executable's own directory, if it is there and executable.
    static func installedDaemon() -> String? {
        guard let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        let path = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("threaddesk-gateway").path
        return access(path, X_OK) == 0 ? path : nil
    }
}
