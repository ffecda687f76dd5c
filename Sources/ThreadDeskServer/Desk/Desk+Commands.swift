import DiscordREST
import Logging
import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// What each slash command does. Commands that call Discord acknowledge first ("thinking…", seen
/// only by the agent) and say how it went by editing that answer; the rest answer at once.
extension Desk {
    func dispatch(_ interaction: DiscordInteraction) async throws {
        // Only this bot's interactions, in a support guild: anything else is no agent of ours.
        guard interaction.member != nil, interaction.guildId.map(parts.catalog.guilds.contains) == true,
            interaction.applicationId == (try await applicationID())
        else {
            parts.logger.warning("An interaction of another application or guild was ignored", metadata: ["interaction": "\(interaction)"])
            return
        }
        // A button of a draft note while drafts are off (the assistant switched off since).
        if parts.isDraftInteraction(interaction) {
            try await respond(interaction, .ephemeralMessage("Drafted answers are off now: nothing was sent."))
            return
        }
        // Commands run in a guild channel come with the member; anything else is not ours to take.
        guard let data = interaction.data, let member = interaction.member else { return }
        // Discord offers the commands by `default_member_permissions`, which a guild's admin can
        // widen: ThreadDesk checks the member's permissions in this channel (Discord computes them
        // and sends them) itself, for every command and every autocomplete.
        let access = DeskAccess(parts.settings)
        let allowed = access.allows(DiscordPermissions(string: member.permissions ?? "") ?? [], roles: member.roles)
        // Every command belongs in a ThreadDesk conversation (a thread of the support forum), not in
        // a FAQ post or any other channel a member can reach.
        let place = allowed ? try await conversation(interaction) : nil
        if interaction.type == DiscordInteraction.autocomplete {
            let typed = Self.focusedText(data.options ?? []) ?? ""
            var names: [String] = []
            if let place { names = try await parts.snippets.of(place.app.id).names(startingWith: typed) }
            try await respond(interaction, .choices(names.map { .init(name: $0, value: $0) }))
            return
        }
        guard allowed else {
            parts.logger.notice("A slash command of a member who may not use the desk was refused", metadata: ["interaction": "\(interaction)"])
            try await respond(interaction, .ephemeralMessage("Only members with \(access.requirement) in the support forum can use ThreadDesk's commands."))
            return
        }
        guard let place else {
            try await respond(interaction, .ephemeralMessage("This command works inside a ThreadDesk conversation (a thread of the support forum)."))
            return
        }
        let (thread, owner, app) = place
        if data.name == DeskCommandDefinitions.away {
            try await respond(interaction, .ephemeralMessage(await switchAway(on: data.options?.first?.name == "on", app: app)))
            return
        }
        if data.name == DeskCommandDefinitions.snippets {
            try await respond(interaction, .ephemeralMessage(await manageSnippets(data.options ?? [], of: app.id)))
            return
        }
        if data.name == DeskCommandDefinitions.user {
            try await respond(interaction, .ephemeralMessage(try await userCard(owner, thread: thread, app: app)))
            return
        }
        if let book = parts.books.first(where: { $0.definitions.contains { $0.name == data.name } }) {
            let answer: String
            do {
                answer = try await book.answer(data, in: thread, owner: owner, app: app)
            } catch {
                parts.logger.warning("A slash command failed", metadata: ["command": "\(data.name)", "error": "\(error)"])
                answer = "That did not work: \(Self.explain(error)). Try again."
            }
            try await respond(interaction, .ephemeralMessage(answer))
            return
        }
        let later = [
            DeskCommandDefinitions.close, DeskCommandDefinitions.reopen, DeskCommandDefinitions.snippet, DeskCommandDefinitions.silent,
            DeskCommandDefinitions.translate, DeskCommandDefinitions.replyTranslated,
        ]
        guard later.contains(data.name) else {
            try await respond(interaction, .ephemeralMessage("ThreadDesk does not know this command (any more)."))
            return
        }
        // Discord takes one answer per interaction: one delivered twice is done once.
        guard try await acknowledge(interaction) else { return }
        let outcome: String
        do {
            outcome = try await perform(data, by: member, in: thread, owner: owner, app: app, locale: interaction.locale)
        } catch {
            parts.logger.warning("A slash command failed", metadata: ["command": "\(data.name)", "error": "\(error)"])
            if case DiscordError.unavailable = error {
                // The answer was lost: Discord may have done it. A webhook post has no nonce.
                outcome = "Discord did not answer in time: it may or may not have happened. Look at the thread before you try again."
            } else {
                outcome = "That did not work: \(Self.explain(error)). Nothing was sent; try again."
            }
        }
        try await parts.discord.editOriginalResponse(applicationID: interaction.applicationId, token: interaction.token, content: outcome)
    }

    /// The ThreadDesk thread the interaction came from, its user and their app (in the app's
    /// guild); nil anywhere else.
    private func conversation(_ interaction: DiscordInteraction) async throws -> (thread: Snowflake, owner: UserID, app: AppSettings)? {
        guard let channel = interaction.channelId, let thread = Snowflake(channel), let owner = try await parts.ingestion.owner(of: thread),
            let app = parts.catalog.app(of: owner), interaction.guildId == app.guildID
        else {
            return nil
        }
        return (thread, owner, app)
    }

    private func perform(
        _ data: DiscordInteraction.CommandData, by member: DiscordInteraction.Member, in thread: Snowflake, owner: UserID,
        app: AppSettings, locale: String?
    ) async throws -> String {
        let options = data.options ?? []
        let speaks = [DeskCommandDefinitions.snippet, DeskCommandDefinitions.silent, DeskCommandDefinitions.replyTranslated].contains(data.name)
            || (data.name == DeskCommandDefinitions.close && Self.text("message", in: options)?.isEmpty == false)
        if speaks, parts.voice.isReserved(member.displayName, in: app.forumChannelID) { return Self.reservedSpeaker(member.displayName) }
        switch data.name {
        case DeskCommandDefinitions.translate:
            return try await translateUsersMessages(count: Self.text("count", in: options).flatMap { Int($0) }, in: thread, owner: owner, app: app, into: locale)
        case DeskCommandDefinitions.replyTranslated:
            return try await replyTranslated(Self.text("text", in: options) ?? "", by: member, in: thread, owner: owner, app: app)
        case DeskCommandDefinitions.close:
            if let delay = Self.text("in", in: options), !delay.isEmpty {
                guard let closings = parts.closings else { return "Scheduled closes are not available here." }
                if let message = Self.text("message", in: options), !message.isEmpty {
                    return "A scheduled close takes no message: nothing was sent or scheduled. Send your reply, then `/close in:`."
                }
                return try await closings.scheduleClose(owner, thread: thread, after: delay, by: member.displayName)
            }
            if let message = Self.text("message", in: options), !message.isEmpty {
                guard let problem = Self.replyProblem(message) else {
                    try await speak(message, in: thread, owner: owner, as: member)
                    try await close(thread, owner: owner)
                    return "Sent your message; the conversation is being closed (resolved and archived). The user's next message opens it again."
                }
                return problem
            }
            try await close(thread, owner: owner)
            return "Closing the conversation (resolved and archived). The user's next message opens it again."
        case DeskCommandDefinitions.reopen:
            if let status = parts.status { status.reopen(thread) } else { _ = try await parts.discord.modifyThread(thread.description, archived: false) }
            try await parts.closings?.agentReopened(owner, thread: thread)
            return "Reopening the conversation: it needs a reply."
        case DeskCommandDefinitions.snippet:
            let name = Self.text("name", in: options) ?? ""
            guard let template = try await parts.snippets.of(app.id).text(of: name) else {
                return "There is no snippet named “\(name)”. `/snippets list` shows them."
            }
            let installation = try await parts.store.user(owner)?.installation
            let text = Snippets.fill(template, installation: installation)
            if let problem = Self.replyProblem(text) { return problem }
            try await speak(text, in: thread, owner: owner, as: member)
            return "Sent the snippet “\(Snippets.normalized(name))”."
        default:
            let text = Self.text("text", in: options) ?? ""
            let silent = NoteMarkers.isSilent(text) ? text : NoteMarkers.silentPrefixes[1] + " " + text
            if let problem = Self.replyProblem(text) ?? Self.replyProblem(silent) { return problem }
            try await speak(silent, in: thread, owner: owner, as: member)
            return "Sent without a notification: the user sees it when they open the conversation."
        }
    }

    /// Posts as support (through the forum's webhook, under the agent's name) and takes the
    /// message into the mirror under the owner's lock, as any reply: listed, streamed, pushed.
    func speak(_ text: String, in thread: Snowflake, owner: UserID, as member: DiscordInteraction.Member) async throws {
        guard let app = parts.catalog.app(of: owner) else { return }
        try await parts.users.withUser(owner) { context in
            let posted = try await parts.voice.say(text, in: thread.description, of: app.forumChannelID, as: member.displayName)
            try await parts.ingestion.ingestOwn(posted, record: context.record)
        }
    }

    private func close(_ thread: Snowflake, owner: UserID) async throws {
        if let status = parts.status { status.close(thread) } else { _ = try await parts.discord.modifyThread(thread.description, archived: true) }
        // A closed conversation is over: the next one may get an answer while away again.
        if try await parts.store.user(owner)?.live.assistAnsweredAt != nil {
            try await parts.users.withUser(owner) { context in context.record?.live.assistAnsweredAt = nil }
        }
        try await parts.closings?.agentClosed(owner, thread: thread)
    }

    private func switchAway(on: Bool, app: AppSettings) async -> String {
        do {
            try await parts.away.set(away: on, app: app.id)
            if on {
                return app.awayMessage == nil
                    ? "Support is away (no AWAY_MESSAGE is set, so users get none). `/away off` goes back to the hours."
                    : "Support is away: users who write get the away message. `/away off` goes back to the hours."
            }
            let status = try await parts.away.status(of: app)
            return status.away ? "Back to the support hours (outside them now)." : "Back to the support hours: support is in."
        } catch {
            return "ThreadDesk could not reach its store; nothing changed."
        }
    }

    /// Why an agent named `name` cannot reply: the user would take the reply for an automatic answer.
    static func reservedSpeaker(_ name: String) -> String {
        "Your display name here, “\(DiscordMarkdown.escaped(name))”, is the one ThreadDesk's automatic answers are posted under: "
            + "users would take your reply for one. Nothing was sent; change your server nickname, then reply."
    }

    /// Why a reply cannot be sent as it is, in words for the agent; nil when it can.
    static func replyProblem(_ text: String) -> String? {
        if text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { return "A reply needs some text." }
        if text.utf16.count > MessageText.discordLimit { return "That is longer than Discord's \(MessageText.discordLimit) characters; nothing was sent." }
        if let control = ControlCharacters.first(in: text) {
            return "That holds the control character \(ControlCharacters.name(control)) (only line breaks and tabs can be sent); nothing was sent."
        }
        return nil
    }

    /// The first answer, "thinking…", seen only by the agent. False when Discord says the
    /// interaction was answered already (delivered twice) or is too old to answer.
    private func acknowledge(_ interaction: DiscordInteraction) async throws -> Bool {
        do {
            try await parts.discord.respond(to: interaction.id, token: interaction.token, .deferredEphemeral)
            return true
        } catch .api(let error) where error.code == .alreadyAcknowledged || error.code == .unknownInteraction {
            parts.logger.notice("A slash command was answered already or came too late", metadata: ["interaction": "\(interaction)"])
            return false
        } catch .unavailable {
            // The answer was lost, not refused: Discord may well have it; carry on.
            return true
        } catch {
            throw error
        }
    }

    func respond(_ interaction: DiscordInteraction, _ response: DiscordInteractionResponse) async throws {
        do {
            try await parts.discord.respond(to: interaction.id, token: interaction.token, response)
        } catch .api(let error) where error.code == .alreadyAcknowledged {
            // Delivered twice: the first delivery answered.
        } catch {
            throw error
        }
    }

    static func explain(_ error: any Error) -> String {
        switch error {
        case let discord as DiscordError:
            if case .api(let failure) = discord { return "Discord refused (\(failure.code.rawValue))" }
            return "Discord did not answer in time"
        default: return "ThreadDesk could not reach its store"
        }
    }

    /// The option's text, looking inside a subcommand too.
    static func text(_ name: String, in options: [DiscordInteractionOption]) -> String? {
        for option in options {
            if option.name == name, let text = option.text { return text }
            if let nested = option.options, let found = text(name, in: nested) { return found }
        }
        return nil
    }

    /// What the agent has typed so far in the option being autocompleted.
    static func focusedText(_ options: [DiscordInteractionOption]) -> String? {
        for option in options {
            if option.focused == true { return option.text ?? "" }
            if let nested = option.options, let found = focusedText(nested) { return found }
        }
        return nil
    }
}
