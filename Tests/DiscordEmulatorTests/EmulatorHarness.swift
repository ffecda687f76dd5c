import DiscordEmulator
import DiscordREST
import Logging
import Testing

/// A real emulator on a loopback port for one test, and raw HTTP to it.
enum Harness {
    static let logger: Logger = {
        var logger = Logger(label: "emulator-test")
        logger.logLevel = .error
        return logger
    }()

    static func withEmulator(
        _ configure: (inout DiscordEmulator.Configuration) -> Void = { _ in },
        _ body: @Sendable (DiscordEmulator, RawHTTP) async throws -> Void
    ) async throws {
        var configuration = DiscordEmulator.Configuration()
        // Tests open a gateway session whenever they need an interaction's token: no 5 s between identifies.
        configuration.identifyConcurrencyWindow = .zero
        // Discord's 3 s to answer an interaction is tested on a clock the test moves; elsewhere a
        // loaded machine must not make an answer late.
        configuration.interactionResponseWindow = .seconds(600)
        configure(&configuration)
        try await DiscordEmulator.withRunning(configuration: configuration, logger: logger) { emulator in
            try await body(emulator, RawHTTP(endpoints: await emulator.endpoints()))
        }
    }
}

extension RawHTTP {
    var guildCommandsPath: String { "/applications/\(endpoints.applicationID)/guilds/\(endpoints.guildID)/commands" }

    /// Registers the guild's commands (a bulk overwrite, `commands` a JSON array's text).
    @discardableResult
    func register(_ commands: String) async throws -> [JSON] {
        let answer = try await call(.PUT, guildCommandsPath, body: commands)
        try #require(answer.status == 200, "\(answer.json.map { String(decoding: $0.encoded(), as: UTF8.self) } ?? "")")
        return answer.json?.arrayValue ?? []
    }

    /// A support thread in the forum, started by the bot as ThreadDesk starts them.
    func startThread(_ name: String = "support thread") async throws -> String {
        let answer = try await call(
            .POST, "/channels/\(endpoints.forumChannelID)/threads",
            json: ["name": .string(name), "message": ["content": "hello"]])
        try #require(answer.status == 201)
        return try #require(answer.json?["id"]?.stringValue)
    }

    /// `POST /interactions/{id}/{token}/callback`, without the bot's token (the path's token is enough).
    func callback(_ id: String, token: String, _ body: JSON, withResponse: Bool = false) async throws -> Answer {
        try await call(
            .POST, "/interactions/\(id)/\(token)/callback" + (withResponse ? "?with_response=true" : ""), json: body, bot: false)
    }

    func webhookPath(token: String) -> String { "/webhooks/\(endpoints.applicationID)/\(token)" }
}

/// Commands most tests register: `/close` with a required autocompleted `reason`, `/ticket` with
/// an `assign` subcommand, and `/purge` for members who may manage messages.
let supportCommands = """
    [
      {"name": "close", "description": "Close the conversation", "type": 1,
       "options": [{"type": 3, "name": "reason", "description": "Why", "required": true, "autocomplete": true}]},
      {"name": "ticket", "description": "Ticket tools",
       "options": [{"type": 1, "name": "assign", "description": "Assign it",
                    "options": [{"type": 6, "name": "agent", "description": "Who", "required": true},
                                {"type": 4, "name": "priority", "description": "How urgent"}]}]},
      {"name": "purge", "description": "Delete the thread", "default_member_permissions": "8192", "contexts": [0]}
    ]
    """
