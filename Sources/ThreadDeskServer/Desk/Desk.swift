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
    }

    let parts: Parts
    private let queue = Mutex<[DiscordInteraction]>([])
    /// The bot's application, once asked: only its interactions, in our guild, are answered.
    private let application = Mutex<String?>(nil)
    /// Commands being answered now, at most `concurrencyLimit`.
    private let running = Mutex(0)
    static let concurrencyLimit = 32
    private let wakeUps = WakeSignal()
    /// Interactions waiting beyond this many are dropped: Discord tells the agent the
    /// application did not respond, and nothing half-done is left.
    static let queueLimit = 256
    /// How long one command may take in all (its token lasts 15 minutes).
    static let commandTimeout: Duration = .seconds(60)
    /// How long a failed registration waits before the next try.
    static let retryAfter: Duration = .seconds(30)

    var description: String { "Desk" }

    private let work: BackgroundWork
    static let workName = "slash commands"

    init(_ parts: Parts, work: BackgroundWork = .untracked) {
        self.parts = parts
        self.work = work
        // The registration is due from the start.
        if parts.settings.commands { work.begin("slash command registration") }
    }

    /// An interaction the gateway heard; answered in the background (`run`), or dropped with a
    /// warning when `queueLimit` wait already.
    /// - Parameter interaction: A slash command or an autocomplete, as the gateway gave it.
    func receive(_ interaction: DiscordInteraction) {
        let accepted = queue.withLock { queue in
            guard queue.count < Self.queueLimit else { return false }
            queue.append(interaction)
            return true
        }
        if accepted {
            work.begin(Self.workName)
            wakeUps.signal()
        } else {
            parts.logger.warning("Too many slash commands at once; one was dropped")
        }
    }

    /// Registers the commands (when on) and answers interactions, `concurrencyLimit` at once,
    /// until graceful shutdown. Throws nothing: a command that fails is logged.
    func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                if self.parts.settings.commands { group.addTask { await self.registerCommands() } }
                while !Task.isCancelled {
                    // As many as there is room for; the rest wait for a command to finish.
                    let room = Self.concurrencyLimit - self.running.withLock { $0 }
                    let waiting = self.queue.withLock { queue in
                        let taken = Array(queue.prefix(max(0, room)))
                        queue.removeFirst(taken.count)
                        return taken
                    }
                    if waiting.isEmpty {
                        _ = await self.wakeUps.wait()
                        continue
                    }
                    self.running.withLock { $0 += waiting.count }
                    for interaction in waiting {
                        group.addTask {
                            await self.answer(interaction)
                            self.running.withLock { $0 -= 1 }
                            self.work.end(Self.workName)
                            self.wakeUps.signal()
                        }
                    }
                }
            }
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
