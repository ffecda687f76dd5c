import DiscordREST
import Foundation
import HTTPTypes
import Logging
import NIOCore
import Prometheus
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// The user's forum thread: posting into it, making it (and a new one when Discord deleted or
/// locked the old), adopting one an earlier attempt made, and room in a full forum.
struct ThreadService: Sendable {
    let store: any UserRecords & GlobalValues & MirrorStore & UserProfiles
    let discord: DiscordClient<AnyClock>
    let bot: BotIdentity
    let feed: FeedState
    let ingestion: MirrorIngestion
    /// Told of a thread just made (its first status then needs no read); nil when status tags are off.
    let status: StatusTags?
    let quotas: Quotas
    /// Each user's thread is made in their app's forum (its default tag; its legacy routes, when
    /// on, let a reference-system id adopt its thread by name).
    let catalog: AppCatalog
    let metrics: ServerMetrics
    let logger: Logger
    let now: @Sendable () -> Date

    var unrecorded: UnrecordedThreads {
        UnrecordedThreads(store: store, discord: discord, bot: bot, catalog: catalog)
    }

    /// Posts `message` into the user's thread, creating the thread with it as the starter post
    /// when there is none, and a new thread when Discord says the old one is deleted or locked.
    /// The record in `context` is updated as soon as a thread exists, so a later failure in the
    /// same request cannot make a retry create a second one.
    /// A new thread is charged to the thread budget of `address` and of the whole server first.
    /// Without `mayStartThread` (App Attest: an attested caller whose request was not asserted),
    /// a new thread is refused with `assertionRequired` before Discord is asked to make one.
    /// - Parameters:
    ///   - message: The post (the starter post of a new thread).
    ///   - context: The user's record, held by the caller; its thread is set when one is made.
    ///   - address: The client's address, whose thread budget a new thread is charged to; nil when
    ///     it was charged already (the outbox charges a user's first thread when it accepts the message).
    ///   - mayStartThread: Whether a new thread may be made for this request.
    ///   - notes: Gets the notes a new thread was given (where a locked conversation went on from,
    ///     the device): posted here, outside the user's lock, for the caller to take into the mirror
    ///     under it.
    /// - Returns: The message as Discord posted it.
    /// - Throws: `SupportFailure.notAuthenticated` without a record, `DeviceCheckFailure.assertionRequired`,
    ///   `SupportFailure.limitReached` when a budget says no, `SupportFailure.forumNeedsTag`,
    ///   `DiscordError` when Discord refuses or fails, and the store's errors.
    func post(
        _ message: DiscordMessageCreate, in context: inout UserContext, from address: String?, mayStartThread: Bool = true,
        notes: inout [DiscordMessage]
    ) async throws -> DiscordMessage {
        guard var record = context.record else { throw SupportFailure.notAuthenticated }
        guard let app = catalog.app(of: record.id) else { throw AppNotServed(app: record.id.app) }
        var lockedThread: String?
        if let thread = record.threadID {
            do {
                return try await discord.createMessage(in: thread, message)
            } catch .api(let error) where error.threadIsGone {
                logger.notice("Thread was deleted; starting a new one", metadata: ["user": "\(context.id.logValue)", "thread": "\(thread)"])
            } catch .api(let error) where error.threadIsLocked {
                logger.notice("Thread is locked; starting a new one", metadata: ["user": "\(context.id.logValue)", "thread": "\(thread)"])
                lockedThread = thread
            } catch {
                throw error
            }
            record.threadID = nil
        }
        guard mayStartThread else { throw DeviceCheckFailure.assertionRequired }
        // Discord can only have a thread of this user's that the store does not know when an
        // attempt of ours was cut short (its answer lost, the process or the database gone
        // meanwhile) or the id comes from before ThreadDesk: only then is it worth reading every
        // active thread of the guild. An attempt is written down before Discord is asked.
        // Every limit says yes before Discord is asked anything, the search included.
        if let address { try await quotas.charge(.thread, address: address) }
        let unrecorded = ThreadNotes.unrecordedThreadKey(record.id)
        if let adoption = ThreadNotes.adoption(try await store.globalValue(unrecorded), for: record.id, legacyRoutes: app.legacyAPIKey != nil),
            let adopted = try await existingThread(for: record.id, adoption, posting: message)
        {
            // An earlier attempt made the thread and then failed before the store kept it.
            logger.notice("Found the user's thread in Discord; using it", metadata: ["user": "\(context.id.logValue)", "thread": "\(adopted.thread)"])
            record.threadID = adopted.thread
            record.updatedAt = now()
            context.record = record
            if let starter = adopted.starter { return starter }
            return try await discord.createMessage(in: adopted.thread, message)
        }
        let starter = ThreadNotes.starterDigest(content: message.content, fileSizes: message.files.map(\.bytes.readableBytes))
        try await store.setGlobalValue(unrecorded, to: ThreadNotes.attemptNote(at: now(), starter: starter))
        let created: DiscordForumThread
        do {
            created = try await startThread(with: message, for: record, in: app)
        } catch let error as DiscordError {
            // Discord answered no: it made no thread, and there is none to look for next time.
            if case .api = error { try await store.setGlobalValue(unrecorded, to: nil) }
            throw error
        } catch {
            throw error
        }
        record.threadID = created.channel.id
        record.updatedAt = now()
        context.record = record
        if let thread = Snowflake(created.channel.id) {
            // New: its whole history is the message just posted, which the caller ingests.
            let epoch = try await feed.snapshot().epoch
            try await store.saveMirrorThread(
                MirrorThread(id: thread, owner: record.id, complete: true, syncedEpoch: epoch, syncedAt: now(), lastActivity: now()))
            // What it shows is in Discord's answer: its first status needs no read of it.
            await status?.started(thread, tags: created.channel.appliedTags ?? [])
        }
        notes += await afterThreadCreated(created.channel.id, continuing: lockedThread, app: app, in: &context)
        return created.message
    }

    /// The user's thread if Discord has one the store does not know (`UnrecordedThreads`). When
    /// its starter post is `message` (the same send retried), that post is returned too, so it is
    /// not posted twice.
    private func existingThread(for id: UserID, _ adoption: ThreadNotes.Adoption, posting message: DiscordMessageCreate) async throws
        -> (thread: String, starter: DiscordMessage?)?
    {
        let bot = try await self.bot.id()
        let candidates = try await unrecorded.candidates(for: id, adoption)
        guard adoption.starter != nil else {
            // Named for the user (a reference-system thread): the newest.
            guard let first = candidates.first else { return nil }
            let same = first.starter.map { $0.author.id == bot.description && $0.content == message.content } ?? false
            return (first.thread, same ? first.starter : nil)
        }
        // Two unclaimed threads that both start as the attempt did ("Hi"): neither is surely this
        // user's, so neither is taken.
        guard candidates.count == 1, let found = candidates.first else { return nil }
        return (found.thread, found.starter?.content == message.content ? found.starter : nil)
    }

    private func startThread(with message: DiscordMessageCreate, for record: UserRecord, in app: AppSettings) async throws -> DiscordForumThread {
        let installation = record.pendingInstallation ?? record.installation
        var thread = DiscordForumThreadCreate(name: Self.threadName(firstMessage: message, installation: installation), message: message)
        do {
            return try await discord.startForumThread(in: app.forumChannelID, thread)
        } catch .api(let error) where error.code == .maximumActiveThreads {
            // The forum is full: never leave a user unable to write. Make room, then try once more
            // (the second and last try).
            try await archiveIdleThreads(of: app)
            return try await discord.startForumThread(in: app.forumChannelID, thread)
        } catch .api(let error) where error.code == .tagRequired {
            thread.appliedTags = [try await defaultTag(of: app)]
            return try await discord.startForumThread(in: app.forumChannelID, thread)
        } catch {
            throw error
        }
    }

    /// How many of the least recently active ThreadDesk threads a full forum archives at once.
    static let archivedWhenFull = 5

    /// Archives the ThreadDesk threads idle the longest (by their last message), so new ones fit.
    /// An archived thread comes back when its user writes again.
    /// - Throws: `DiscordError` when the active threads cannot be read or one cannot be archived,
    ///   and the store's errors.
    func archiveIdleThreads(of app: AppSettings) async throws {
        let active = try await discord.activeThreads(guildID: app.guildID).threads
        var ours: [DiscordChannel] = []
        for thread in active where thread.parentId == app.forumChannelID {
            if try await store.userID(forThread: thread.id) != nil { ours.append(thread) }
        }
        let lastActive = { (thread: DiscordChannel) in Snowflake(thread.lastMessageId ?? thread.id) ?? Snowflake(0) }
        let idlest = ours.sorted { lastActive($0) < lastActive($1) }.prefix(Self.archivedWhenFull)
        for thread in idlest {
            _ = try await discord.modifyThread(thread.id, archived: true)
        }
        metrics.mirror.threadsArchived.increment(by: Int64(idlest.count))
        logger.notice(
            "The support forum is full (160006): archived its idlest ThreadDesk threads", metadata: ["app": "\(app.id)", "archived": "\(idlest.count)"])
    }

    /// The configured default tag, or the forum's first.
    private func defaultTag(of app: AppSettings) async throws -> String {
        if let tag = app.defaultTagID { return tag }
        let forum = try await discord.channel(app.forumChannelID)
        guard let tag = forum.availableTags?.first?.id else { throw SupportFailure.forumNeedsTag }
        return tag
    }

    /// Notes support should see at the top of a new thread: where a locked conversation went on
    /// from, and the device info that was waiting for a thread. Returns those posted.
    private func afterThreadCreated(_ thread: String, continuing locked: String?, app: AppSettings, in context: inout UserContext) async
        -> [DiscordMessage]
    {
        var notes: [DiscordMessage] = []
        do {
            if let locked {
                let note = ":ninja: Continued from <#\(locked)>, which is locked."
                notes.append(try await discord.createMessage(
                    in: thread, .init(content: note, nonce: ThreadNotes.nonce("continued", id: context.id, thread))))
            }
            let pending = context.record?.pendingInstallation ?? context.record?.installation
            let attributes = await attributes(of: context.id)
            if pending != nil || !attributes.isEmpty {
                // The thread is named for the conversation: its first note says whose it is, and
                // what the app says about them.
                var lines = pending?.note.components(separatedBy: "\n") ?? [":ninja: **User**"]
                lines.insert("- User: `\(context.id.local.rawValue)`" + (catalog.isShared ? " of \(app.name)" : ""), at: 1)
                let room = MessageText.discordLimit - lines.joined(separator: "\n").utf16.count - "\n- Attributes: ".utf16.count
                if let shown = ProfileText.attributes(attributes, budget: room) { lines.append("- Attributes: " + shown) }
                let note = MessageText.clip(lines.joined(separator: "\n"))
                notes.append(try await discord.createMessage(
                    in: thread, .init(content: note, nonce: ThreadNotes.nonce("device", id: context.id, thread))))
                if let pending {
                    context.record?.installation = pending
                    context.record?.pendingInstallation = nil
                }
            }
        } catch {
            // The user's own message is in; a missing note is not worth failing the send over.
            logger.warning("Could not post a note into a new thread", metadata: ["thread": "\(thread)", "error": "\(error)"])
        }
        return notes
    }

    /// The user's attributes for the first note; none when the store cannot say (the note goes without).
    private func attributes(of id: UserID) async -> [String: AttributeValue] {
        do {
            return try await store.profile(of: id).attributes
        } catch {
            logger.notice("Could not read the user's attributes for a new thread's note", metadata: ["user": "\(id.logValue)", "error": "\(error)"])
            return [:]
        }
    }

    /// Named for the conversation, as the forum's list shows it: a short excerpt of the first
    /// message on one line, then the app version (`My app crashes when I… · 1.4.0 (142)`), within
    /// Discord's 100 characters. Only the name a thread starts with: an agent's rename stays.
    static func threadName(firstMessage message: DiscordMessageCreate, installation: InstallationInfo?) -> String {
        // A note of ThreadDesk's that starts the thread (a crash report, diagnostics): named by what
        // it says, without its marker and bold (a user's own text never starts with the marker:
        // it is posted behind "(user wrote) ").
        let marker = NoteMarkers.prefixes[0] + " "
        let text = message.content.hasPrefix(marker)
            ? String(message.content.dropFirst(marker.count)).replacingOccurrences(of: "**", with: "")
            : NoteMarkers.userText(posted: message.content)
        let words = text.split(whereSeparator: { $0.isWhitespace || $0.isNewline }).joined(separator: " ")
        var excerpt = words.isEmpty ? (message.files.first.map { "File: \($0.filename)" } ?? "New conversation") : words
        if excerpt.utf16.count > excerptLength {
            // Whole characters, counted as Discord counts a name (UTF-16 units), and an ellipsis.
            var kept = ""
            for character in excerpt {
                guard kept.utf16.count + character.utf16.count < excerptLength else { break }
                kept.append(character)
            }
            excerpt = kept.trimmingCharacters(in: .whitespaces) + "…"
        }
        let name = [excerpt, installation?.appLabel].compactMap { $0 }.joined(separator: " · ")
        return MessageText.clip(name, limit: 100)
    }

    /// The user's app is no longer in the configuration (taken out of `APPS_FILE`): nothing of
    /// theirs is posted (its forum is not the deployment's any more).
    struct AppNotServed: Error, CustomStringConvertible {
        let app: AppID
        var description: String { "the app \(app) is not served by this deployment any more" }
    }

    /// How much of the first message a thread's name shows, in UTF-16 units (the ellipsis included).
    static let excerptLength = 60
}
