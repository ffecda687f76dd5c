import Foundation
import DiscordREST
import Logging
import ThreadDeskCore

/// `/snippets add|edit|remove|list`: the canned replies, managed from Discord.
extension Desk {
    func manageSnippets(_ options: [DiscordInteractionOption], of app: AppID) async -> String {
        let snippets = parts.snippets.of(app)
        guard let subcommand = options.first else { return "Choose add, edit, remove or list." }
        let name = Self.text("name", in: subcommand.options ?? []) ?? ""
        let text = Self.text("text", in: subcommand.options ?? [])
        do {
            switch subcommand.name {
            case "add":
                try await snippets.change(.add, name: name, text: text)
                return "Added “\(Snippets.normalized(name))”. Send it with `/snippet`."
            case "edit":
                try await snippets.change(.edit, name: name, text: text)
                return "Changed “\(Snippets.normalized(name))”."
            case "remove":
                try await snippets.change(.remove, name: name, text: nil)
                return "Removed “\(Snippets.normalized(name))”."
            case "list":
                let all = try await snippets.all()
                guard !all.isEmpty else { return "No snippets yet. Add one with `/snippets add`." }
                let lines = all.keys.sorted().map { "• `\($0)` — \(MessageText.clip(all[$0] ?? "", limit: 80).replacingOccurrences(of: "\n", with: " "))" }
                return MessageText.clip(lines.joined(separator: "\n"), limit: MessageText.discordLimit)
            default:
                return "Choose add, edit, remove or list."
            }
        } catch let problem as Snippets.Problem {
            return Self.explain(problem)
        } catch {
            parts.logger.warning("Could not change the snippets", metadata: ["error": "\(error)"])
            return "ThreadDesk could not reach its store; nothing changed."
        }
    }

    static func explain(_ problem: Snippets.Problem) -> String {
        switch problem {
        case .invalidName: "A snippet's name is 1–\(Snippets.nameLength.upperBound) letters, digits, - or _."
        case .invalidText: "A snippet's text is 1–\(MessageText.discordLimit) characters, without control characters (line breaks and tabs are fine)."
        case .full: "There are \(Snippets.limit) snippets already; remove one first."
        case .exists(let name): "“\(name)” exists already: `/snippets edit` changes it."
        case .notFound(let name): "There is no snippet named “\(name)”."
        case .busy: "Someone else is changing the snippets right now; try again."
        }
    }
}
