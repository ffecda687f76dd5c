import Crypto
import DiscordREST
import Foundation

/// ThreadDesk's slash commands, as registered in the guild.
enum DeskCommandDefinitions {
    static let close = "close"
    static let reopen = "reopen"
    static let snippet = "snippet"
    static let snippets = "snippets"
    static let user = "user"
    static let silent = "silent"
    static let away = "away"
    static let translate = "translate"
    static let replyTranslated = "reply-translated"

    /// - Parameter translation: Whether `/translate` and `/reply-translated` are offered (an app has the assistant on).
    static func all(permissions: String, translation: Bool = false) -> [DiscordApplicationCommand] {
        let text = { (description: String, required: Bool) in
            DiscordCommandOption(.string, name: "text", description: description, required: required, maxLength: 2000)
        }
        let name = { (autocomplete: Bool) in
            DiscordCommandOption(.string, name: "name", description: "The snippet's name", required: true, autocomplete: autocomplete, maxLength: 32)
        }
        let commands = [
            DiscordApplicationCommand(
                name: close, description: "Resolve the conversation and archive the thread; optionally say goodbye",
                options: [
                    DiscordCommandOption(.string, name: "message", description: "A last reply to the user", maxLength: 2000),
                    DiscordCommandOption(
                        .string, name: "in", description: "Close later (2h, 30m, 3d) unless the user writes first", maxLength: 16),
                ]),
            DiscordApplicationCommand(name: reopen, description: "Bring a closed conversation back: needs reply"),
            DiscordApplicationCommand(name: snippet, description: "Send a canned reply to the user", options: [name(true)]),
            DiscordApplicationCommand(
                name: snippets, description: "Manage the canned replies",
                options: [
                    DiscordCommandOption(.subcommand, name: "add", description: "Add a snippet", options: [name(false), text("What it says", true)]),
                    DiscordCommandOption(.subcommand, name: "edit", description: "Change a snippet", options: [name(true), text("What it says now", true)]),
                    DiscordCommandOption(.subcommand, name: "remove", description: "Remove a snippet", options: [name(true)]),
                    DiscordCommandOption(.subcommand, name: "list", description: "List the snippets"),
                ]),
            DiscordApplicationCommand(name: user, description: "Who this user is: app, device, push, reading"),
            DiscordApplicationCommand(
                name: silent, description: "Reply without a notification on the user's device", options: [text("The reply", true)]),
            DiscordApplicationCommand(
                name: away, description: "Support is away (a vacation), whatever the hours say; or back to the hours",
                options: [
                    DiscordCommandOption(.subcommand, name: "on", description: "Away: users who write get the away message"),
                    DiscordCommandOption(.subcommand, name: "off", description: "Back to the support hours"),
                ]),
        ]
        let translating = [
            DiscordApplicationCommand(
                name: translate, description: "The user's last messages in your language (only you see it)",
                options: [DiscordCommandOption(.integer, name: "count", description: "How many of the user's messages (1 to 10; 3)")]),
            DiscordApplicationCommand(
                name: replyTranslated, description: "Reply in the user's language; your words are kept in a note",
                options: [text("Your reply, in your language", true)]),
        ]
        return (commands + (translation ? translating : [])).map {
            var command = $0
            command.defaultMemberPermissions = permissions
            return command
        }
    }

    /// A fingerprint of the command set: registration is skipped while it is what was registered.
    static func fingerprint(_ commands: [DiscordApplicationCommand], applicationID: String, guildID: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = (try? encoder.encode(commands)) ?? Data()
        let digest = SHA256.hash(data: Data("\(applicationID)/\(guildID)/".utf8) + data)
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    /// The store's note of the set last registered.
    static let registeredKey = "desk/commands"
}
