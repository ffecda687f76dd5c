import DiscordGateway
import Foundation
import ThreadDeskSettings

// `threaddesk-gateway [--env-file PATH]`: the gateway daemon on its own, without the server,
// the stores and the emulators linked in (a third of the memory on a small VM; bench/RESULTS.md).
var arguments = CommandLine.arguments.dropFirst()
var envFile = ".env"
while let argument = arguments.popFirst() {
    switch argument {
    case "--env-file":
        guard let path = arguments.popFirst() else {
            FileHandle.standardError.write(Data("--env-file needs a path\n".utf8))
            exit(64)
        }
        envFile = path
    case "--help", "-h":
        print("""
            threaddesk-gateway [--env-file PATH]
              Keeps the Discord gateway open and forwards forum events to the server.
              Needs DISCORD_TOKEN, DISCORD_FORUM_CHANNEL_ID, SERVER_URL, GATEWAY_SECRET (see .env.example).
            """)
        exit(0)
    default:
        FileHandle.standardError.write(Data("unknown argument \(argument); see --help\n".utf8))
        exit(64)
    }
}
exit(try await runGatewayDaemon(environment: DotEnv.environment(path: envFile)))
