import Deadlines
import DiscordREST
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

/// The agent's desk: registers ThreadDesk's slash commands in the guild (once per change of the
/// set) and answers them as the gateway hears them, each in a task of its own so that one slow
/// command never makes another miss Discord's 3 s. Asleep while nobody runs a command.
final class Desk: Service, Sendable, CustomStringConvertible {
    struct Parts: Sendable {
        let users: UserSerializer
        let store: any UserStore
        let discord: DiscordClient<AnyClock>
        let ingestion: MirrorIngestion
        let voice: SupportVoice
        let snippets: Snippets
        let away: SupportAvailability
        let status: StatusTags?
        /// `/translate` and `/reply-translated`; nil when no app has the assistant on.
        let translator: Translator?
        let settings: DeskSettings
        /// The apps: the commands are registered in each one's guild and act within the app of
        /// the thread they are used in.
        let catalog: AppCatalog
        let logger: Logger
        let time: ServerTime
        /// Whether an interaction is a draft note's button or form. One reaches the desk only when
        /// drafts went off after the note was made (the gateway hands them to the drafts otherwise):
        /// the root names the drafts' rule here, so the desk stands below the drafts.
        let isDraftInteraction: @Sendable (DiscordInteraction) -> Bool
        /// Commands of features above the desk (crash reports), answered by them.
        var books: [any DeskCommandBook] = []
        /// What else an agent's close and reopen do (ratings, scheduled closes); nil: nothing.
        var closings: (any ConversationClosings)? = nil
    }

    let parts: Parts
    /// The bot's application, once asked: only its interactions, in our guild, are answered.
    private let application = Mutex<String?>(nil)
    /// Commands and autocompletes: 32 answered at once; beyond 256 waiting they are dropped
    /// (Discord tells the agent the application did not respond, and nothing half-done is left).
    private let commands: InteractionLine
    /// Set when a graceful shutdown begins: no command starts after it.
    private let stopping = Mutex(false)
    /// How long the commands under way at a graceful shutdown may take to finish.
    let drain: ShutdownDrain
    /// How long one command may take in all (its token lasts 15 minutes).
    static let commandTimeout: Duration = .seconds(60)
    /// How long a failed registration waits before the next try.
    static let retryAfter: Duration = .seconds(30)

    var description: String { "Desk" }

    private let work: BackgroundWork
    static let workName = "slash commands"

    init(_ parts: Parts, work: BackgroundWork = .untracked, drain: ShutdownDrain) {
        self.parts = parts
        self.work = work
        self.drain = drain
        commands = InteractionLine(Self.workName, stop: drain, work: work, logger: parts.logger)
        // The registration is due from the start.
        if parts.settings.commands { work.begin("slash command registration") }
    }

    /// An interaction the gateway heard; answered in the background (`run`), or dropped with a
    /// warning when 256 wait already.
    /// - Parameter interaction: A slash command or an autocomplete, as the gateway gave it.
    func receive(_ interaction: DiscordInteraction) {
        commands.receive(interaction)
    }

    /// Registers the commands (when on) and answers interactions, 32 at once, until graceful
    /// shutdown; the commands under way then get `drain` to finish (an agent's reply is not cut
    /// between Discord's post and its record). Throws nothing: a command that fails is logged.
    func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                if self.parts.settings.commands { group.addTask { await cancelWhenGracefulShutdown { await self.registerCommands() } } }
                while !self.stopping.withLock({ $0 }), !Task.isCancelled {
                    let taken = self.commands.take()
                    if taken.isEmpty {
                        _ = await self.commands.wakeUps.wait()
                        continue
                    }
                    for interaction in taken {
                        group.addTask {
                            await self.answer(interaction)
                            self.commands.done()
                        }
                    }
                }
                await self.commands.drain()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.drain.begin()
            self.stopping.withLock { $0 = true }
            self.commands.wakeUps.signal()
        }
    }

    /// Registers the commands unless the store notes this very set as registered (so restarts
    /// and replicas cost no call), retrying after a failure until it is done.
    func registerCommands() async {
        var delay = Self.retryAfter
        var registering = true
        defer { if registering { work.end("slash command registration") } }
        while !Task.isCancelled {
            do {
                try await Deadline.within(.seconds(30)) { try await self.registerIfChanged() }
                return
            } catch {
                // A retry waits for its time: not work due now.
                if registering { work.end("slash command registration") }
                registering = false
                parts.logger.warning(
                    "Could not register the slash commands (is the bot invited with the applications.commands scope?); trying again",
                    metadata: ["error": "\(error)", "retryIn": "\(delay)"])
                try? await parts.time.clock.sleep(for: delay)
                delay = min(delay * 2, Self.longestRetry)
            }
        }
    }

    /// The longest wait between two registration attempts.
    static let longestRetry: Duration = .seconds(3600)

    /// The bot's application id, asked of Discord once.
    /// - Throws: `DiscordError` when Discord cannot say.
    func applicationID() async throws -> String {
        if let known = application.withLock({ $0 }) { return known }
        let id = try await parts.discord.currentApplication().id
        application.withLock { $0 = id }
        return id
    }

    private func registerIfChanged() async throws {
        let application = try await applicationID()
        let commands = DeskCommandDefinitions.all(permissions: parts.settings.permissions, translation: parts.translator != nil)
            + parts.books.flatMap(\.definitions).map { command in
                var command = command
                command.defaultMemberPermissions = parts.settings.permissions
                return command
            }
        // Every guild an app lives in, each on its own: one Discord refuses leaves the others'
        // commands registered. The first app's guild keeps the key from before there were several.
        let first = parts.catalog.apps[0].guildID
        var failure: (any Error)?
        for guild in parts.catalog.guilds.sorted() {
            do {
                let key = guild == first ? DeskCommandDefinitions.registeredKey : "\(DeskCommandDefinitions.registeredKey)/\(guild)"
                try await register(commands, in: guild, application: application, key: key)
            } catch {
                parts.logger.warning("Could not register the slash commands in a guild", metadata: ["guild": "\(guild)", "error": "\(error)"])
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// Registers `commands` in `guild` unless the store's note `key` says they are there already
    /// and Discord agrees (an admin may have removed them): one read, no create.
    private func register(_ commands: [DiscordApplicationCommand], in guild: String, application: String, key: String) async throws {
        let fingerprint = DeskCommandDefinitions.fingerprint(commands, applicationID: application, guildID: guild)
        if try await parts.store.globalValue(key) == fingerprint,
            Set(try await parts.discord.guildCommandNames(applicationID: application, guildID: guild)) == Set(commands.map(\.name))
        {
            return
        }
        try await parts.discord.overwriteGuildCommands(applicationID: application, guildID: guild, commands)
        try await parts.store.setGlobalValue(key, to: fingerprint)
        parts.logger.notice("Registered the slash commands in the guild", metadata: ["guild": "\(guild)", "commands": "\(commands.map(\.name))"])
    }

    private func answer(_ interaction: DiscordInteraction) async {
        do {
            try await Deadline.within(Self.commandTimeout) { try await self.dispatch(interaction) }
        } catch {
            parts.logger.warning("Could not answer a slash command", metadata: ["interaction": "\(interaction)", "error": "\(error)"])
        }
    }
}
