import Logging
import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `/translate` and `/reply-translated`: the agent reads the user in their own language and
/// answers in the user's. Both go through the assistant, charged to the user's and the app's
/// budgets; the agent's original words are kept in a note.
extension Desk {
    /// The user's last `count` messages in the agent's Discord language, for the agent alone.
    func translateUsersMessages(count: Int?, in thread: Snowflake, owner: UserID, app: AppSettings, into locale: String?) async throws -> String {
        guard let translator = parts.translator, translator.isOn(for: app) else { return Self.translationOff }
        let count = min(Translator.maxTexts, max(1, count ?? 3))
        let page = try await parts.store.mirrorPage(thread: thread, .before(nil), limit: 100)
        let messages = Array(page.messages.filter { $0.author == .user }.suffix(count))
        guard !messages.isEmpty else { return "The user has not written anything here yet." }
        // Discord's own locale names; anything else reads as English.
        let language = locale.flatMap(Translator.language) ?? "English (en-US)"
        let translations: [String]
        do {
            translations = try await translator.translate(messages.map(\.content), into: language, app: app, user: owner)
        } catch {
            return Self.translationFailed(error)
        }
        var lines = ["The user's last \(messages.count == 1 ? "message" : "\(messages.count) messages") in \(language):"]
        for (message, translation) in zip(messages, translations) {
            let when = Int(message.id.date.timeIntervalSince1970)
            lines.append("<t:\(when):t>\n" + DiscordMarkdown.quoted(DiscordMarkdown.escaped(translation)))
        }
        return MessageText.clip(lines.joined(separator: "\n"))
    }

    /// The agent's `text` sent to the user in their app's language (the installation's locale),
    /// as support under the agent's name; a note keeps what the agent wrote.
    func replyTranslated(_ text: String, by member: DiscordInteraction.Member, in thread: Snowflake, owner: UserID, app: AppSettings) async throws -> String {
        guard let translator = parts.translator, translator.isOn(for: app) else { return Self.translationOff }
        if let problem = Self.replyProblem(text) { return problem }
        guard let locale = try await parts.store.user(owner)?.installation?.locale, !locale.isEmpty else {
            return "The app never reported the user's language: nothing was sent. Reply as usual, or use /snippet."
        }
        // The app's report is the user's to write: only a language tag is taken as a language.
        guard let language = Translator.language(locale) else {
            return "The app reported a language ThreadDesk cannot read (\(DiscordMarkdown.escaped(String(locale.prefix(40))))): nothing was sent. Reply as usual, or use /snippet."
        }
        let translated: String
        do {
            guard let first = try await translator.translate([text], into: language, app: app, user: owner).first else { return Self.translationFailed(nil) }
            translated = first
        } catch {
            return Self.translationFailed(error)
        }
        if let problem = Self.replyProblem(translated) { return problem }
        try await speak(translated, in: thread, owner: owner, as: member)
        let note = "\(NoteMarkers.prefixes[0]) Sent in \(language), translated. \(DiscordMarkdown.escaped(member.displayName)) wrote:\n" + DiscordMarkdown.quoted(DiscordMarkdown.escaped(text))
        do {
            _ = try await parts.discord.createMessage(
                in: thread.description,
                DiscordMessageCreate(content: MessageText.clip(note), nonce: ThreadNotes.nonce("translated", id: owner, thread.description, translated)))
        } catch {
            parts.logger.notice("Could not keep the original of a translated reply in a note", metadata: ["thread": "\(thread)", "error": "\(error)"])
        }
        return "Sent in \(language):\n" + DiscordMarkdown.quoted(DiscordMarkdown.escaped(translated))
    }

    static let translationOff = "The assistant is off for this app, and with it translation (ASSIST_URL)."

    static func translationFailed(_ error: (any Error)?) -> String {
        let why: String
        switch (error as? AssistRefusal)?.reason {
        case .budgetApp?: why = "the app's daily budget is spent"
        case .budgetUser?: why = "this user's daily budget is spent"
        case .off?: why = "the assistant is off"
        default: why = "the model did not give a usable translation"
        }
        return "Could not translate: \(why). Nothing was sent."
    }
}
