import DiscordEmulator
import Foundation

/// The console's command box: a line typed as an agent types a slash command in Discord, run
/// through the emulator as Discord would (INTERACTION_CREATE to ThreadDesk), and the answer only
/// the agent sees.
enum SandboxDesk {
    struct Command: Equatable {
        var name: String
        var options: [DiscordEmulator.CommandOption]
    }

    struct Problem: Error { var message: String }

    /// The commands the box knows, as its hints name them.
    static let offered = "/user, /close, /close in:2h, /snippet, /snippets, /silent, /reopen, /away, /stats, /crashes, /crash"

    /// `/close thanks!`, `/snippet hello`, `/snippets add hello Hi {app_version}`, `/user`,
    /// `/crash id:C1 fixed:4.3`…
    static func parse(_ line: String) throws(Problem) -> Command {
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix("/") else { throw Problem(message: "A command starts with / (try \(offered)).") }
        let (name, rest) = split(String(trimmed.dropFirst()))
        switch name {
        case "user", "reopen":
            return Command(name: name, options: [])
        case "close":
            // `/close in:2h` schedules the close; anything else is the goodbye.
            if rest.hasPrefix("in:") { return Command(name: name, options: [.string("in", String(rest.dropFirst(3)))]) }
            return Command(name: name, options: rest.isEmpty ? [] : [.string("message", rest)])
        case "stats":
            let days = rest.hasPrefix("days:") ? String(rest.dropFirst(5)) : rest
            guard days.isEmpty || Int(days) != nil else { throw Problem(message: "/stats, or /stats days:7.") }
            return Command(name: name, options: days.isEmpty ? [] : [.init(name: "days", type: 4, value: days)])
        case "silent":
            guard !rest.isEmpty else { throw Problem(message: "/silent needs the reply's text.") }
            return Command(name: name, options: [.string("text", rest)])
        case "snippet":
            guard !rest.isEmpty else { throw Problem(message: "/snippet needs a snippet's name.") }
            return Command(name: name, options: [.string("name", rest)])
        case "snippets":
            let (action, arguments) = split(rest)
            let (snippet, text) = split(arguments)
            switch action {
            case "list": return Command(name: name, options: [.subcommand("list")])
            case "remove" where !snippet.isEmpty: return Command(name: name, options: [.subcommand("remove", [.string("name", snippet)])])
            case "add", "edit":
                guard !snippet.isEmpty, !text.isEmpty else { throw Problem(message: "/snippets \(action) needs a name and the text.") }
                return Command(name: name, options: [.subcommand(action, [.string("name", snippet), .string("text", text)])])
            default: throw Problem(message: "/snippets add|edit NAME TEXT, /snippets remove NAME or /snippets list.")
            }
        case "away":
            guard ["on", "off"].contains(rest) else { throw Problem(message: "/away on or /away off.") }
            return Command(name: name, options: [.subcommand(rest)])
        case "crashes":
            let days = rest.hasPrefix("days:") ? String(rest.dropFirst(5)) : rest
            guard days.isEmpty || Int(days) != nil else { throw Problem(message: "/crashes, or /crashes days:30.") }
            return Command(name: name, options: days.isEmpty ? [] : [.init(name: "days", type: 4, value: days)])
        case "crash":
            return Command(name: name, options: try crashOptions(rest))
        default:
            throw Problem(message: "ThreadDesk has no /\(name) (try \(offered)).")
        }
    }

    /// `C1`, `id:C1 fixed:4.3`, `id:C1 ignore:true`: Discord's `name:value` options (the id may go bare).
    private static func crashOptions(_ text: String) throws(Problem) -> [DiscordEmulator.CommandOption] {
        let usage = "/crash id:C1, /crash id:C1 fixed:4.3 or /crash id:C1 ignore:true."
        var options: [DiscordEmulator.CommandOption] = []
        for word in text.split(whereSeparator: \.isWhitespace) {
            let parts = word.split(separator: ":", maxSplits: 1).map(String.init)
            switch (parts.count == 2 ? parts[0] : "id", parts.last ?? "") {
            case ("id", let id) where !id.isEmpty && !options.contains(where: { $0.name == "id" }): options.append(.string("id", id))
            case ("fixed", let version) where !version.isEmpty: options.append(.string("fixed", version))
            case ("ignore", let flag) where ["true", "false"].contains(flag): options.append(.init(name: "ignore", type: 5, value: flag))
            default: throw Problem(message: usage)
            }
        }
        guard options.contains(where: { $0.name == "id" }) else { throw Problem(message: usage) }
        return options
    }

    private static func split(_ text: String) -> (String, String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let space = trimmed.firstIndex(where: \.isWhitespace) else { return (trimmed, "") }
        return (String(trimmed[..<space]), trimmed[space...].trimmingCharacters(in: .whitespaces))
    }

    /// Runs `line` in the thread as the agent and waits (at most `timeout`) for ThreadDesk's last
    /// word on it: a deferred command's edited answer, or the answer itself.
    static func run(_ line: String, in thread: String, on discord: DiscordEmulator, timeout: Duration = .seconds(10)) async throws
        -> DiscordEmulator.InteractionSnapshot
    {
        let command = try parse(line)
        let started = try discord.runCommand(command.name, inChannel: thread, options: command.options)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            // A deferred command's answer is an empty loading message until ThreadDesk edits it.
            if let answer = discord.interaction(started.id), let content = answer.content, !(answer.callbackType == 5 && content.isEmpty) {
                return answer
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Problem(message: "ThreadDesk did not answer /\(command.name) in time (is the server's gateway connected?).")
    }
}
