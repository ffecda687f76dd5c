import ThreadDeskWire
import Logging
import DiscordREST
import ThreadDeskCore

/// The note a draft is shown in, in the user's thread: hidden from the user (a `:ninja:` note),
/// the model's text escaped so that it renders as written and pings nobody, the FAQ posts it
/// drew on as links, and the three buttons while it waits for an agent.
enum DraftNote {
    /// The FAQ posts named, at most.
    static let maxSources = 3

    /// The note while the draft waits: the text, its sources, Send / Edit / Discard.
    static func waiting(_ text: String, draft: Snowflake, sources: [String]) -> DiscordMessageCreate {
        DiscordMessageCreate(content: content("🤖 Draft answer (not sent yet):", text, sources: sources), components: buttons(draft))
    }

    /// The note once the draft is settled (sent, discarded, replaced, dropped): no buttons.
    static func settled(_ heading: String, _ text: String, sources: [String]) -> DiscordMessageEdit {
        DiscordMessageEdit(content: content(heading, text, sources: sources), components: [])
    }

    /// `:ninja: heading`, the text quoted and escaped, then its sources; within Discord's 2000.
    static func content(_ heading: String, _ text: String, sources: [String]) -> String {
        let head = "\(NoteMarkers.prefixes[0]) \(heading)\n"
        let room = MessageText.discordLimit - head.utf16.count - footer(sources).utf16.count - 1
        return head + MessageText.clip(DiscordMarkdown.quoted(DiscordMarkdown.escaped(text)), limit: room) + "\n" + footer(sources)
    }

    static func footer(_ sources: [String]) -> String {
        let named = sources.prefix(maxSources).map { "<#\($0)>" }
        return named.isEmpty ? "No FAQ answer matched: check it before sending." : "Based on: \(named.joined(separator: ", "))"
    }

    /// The room a heading may take: the longest says who sent the draft (a display name is at most 32).
    static let headingRoom = 100

    /// `text`, cut (marked `…`) where its escaped, quoted form would not fit in a note with any
    /// heading: what the agent reads in the note is exactly what Send posts.
    static func fitted(_ text: String, sources: [String]) -> String {
        let room = MessageText.discordLimit - headingRoom - footer(sources).utf16.count - 1
        func fits(_ candidate: String) -> Bool { DiscordMarkdown.quoted(DiscordMarkdown.escaped(candidate)).utf16.count <= room }
        guard !fits(text) else { return text }
        let characters = Array(text)
        var (low, high) = (0, characters.count)
        while low < high {
            let middle = (low + high + 1) / 2
            if fits(String(characters[..<middle]) + "…") { low = middle } else { high = middle - 1 }
        }
        return String(characters[..<low]) + "…"
    }

    static func buttons(_ draft: Snowflake) -> [DiscordActionRow] {
        // The labels and ids are ours and within Discord's limits: a failure here is a programming error.
        do {
            return [
                try DiscordActionRow([
                    try DiscordButton(.primary, label: "Send", customId: DraftCustomID(draft: draft, action: .send).description),
                    try DiscordButton(.secondary, label: "Edit", customId: DraftCustomID(draft: draft, action: .edit).description),
                    try DiscordButton(.danger, label: "Discard", customId: DraftCustomID(draft: draft, action: .discard).description),
                ])
            ]
        } catch {
            preconditionFailure("the draft buttons break Discord's limits: \(error)")
        }
    }

    /// The modal an agent edits the draft in before it is sent.
    static func editor(_ text: String, draft: Snowflake) -> DiscordModal {
        do {
            let input = try DiscordTextInput(
                customId: inputID, label: "Reply to the user", style: .paragraph, value: MessageText.clip(text, limit: MessageText.discordLimit),
                minLength: 1, maxLength: MessageText.discordLimit, required: true)
            return try DiscordModal(customId: DraftCustomID(draft: draft, action: .submitEdit).description, title: "Edit the draft", inputs: [input])
        } catch {
            preconditionFailure("the draft editor breaks Discord's limits: \(error)")
        }
    }

    /// The editor's one input.
    static let inputID = "text"
}
