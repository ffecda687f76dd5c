import Deadlines
import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore

/// Reading the forum through REST: every post and its starter (a whole read, at start and after
/// a gap), or one post again (another replica heard it change); whether a starter is an answer.
extension FAQMirror {
    /// Reads every post of the forum and its starter (only the stale ones' starters after a gap
    /// in a read, see the type's note); returns how many answers the book holds.
    @discardableResult
    func load() async throws -> Int {
        progress.begin()
        let held = await book.count > 0
        await book.beginLoad()
        // Roles and overwrites may have changed while the feed was away: read them afresh.
        authors.forget()
        try await refreshTags()
        var threads = try await discord.activeThreads(guildID: guildID).threads.filter { $0.parentId == forumID }
        var before: String?
        for _ in 0..<Self.maxArchivedPages {
            let page = try await discord.archivedPublicThreads(in: forumID, before: before)
            threads += page.threads
            guard page.hasMore, let last = page.threads.last?.threadMetadata?.archiveTimestamp, last != before else { break }
            before = last
        }
        // Deleted posts go now, not when every starter has been read.
        await book.prune(keeping: Set(threads.map(\.id)))
        var loaded: [String: FAQBook.Post] = [:]
        // Whether each author may answer, asked once per author in a read.
        var verdicts: [String: Bool] = [:]
        var verdictsGeneration = progress.generation
        var read = 0
        for thread in threads where loaded[thread.id] == nil {
            if progress.isCurrent(thread.id), let kept = await book.held(thread.id), kept.starter != nil {
                // Fetched since the last gap: the gateway's events since have kept it current.
                loaded[thread.id] = FAQBook.Post(
                    title: thread.name ?? "", tagIDs: thread.appliedTags ?? [], starter: kept.starter, attachments: kept.attachments,
                    updatedAt: kept.updatedAt)
                continue
            }
            if held, read > 0 { try await time.sleep(for: Self.heldReadInterval) }
            read += 1
            let generation = progress.generation
            if generation != verdictsGeneration {
                // A gap: who may write may have changed unheard.
                (verdicts, verdictsGeneration) = ([:], generation)
                authors.forget()
            }
            guard let starter = try await starter(of: thread.id) else { continue }
            defer { progress.fetched(thread.id, generation: generation) }
            if verdicts[starter.author.id] == nil { verdicts[starter.author.id] = try await authors.mayAnswer(starter) }
            guard verdicts[starter.author.id] == true else {
                logger.notice("A FAQ post by a member who may not use the desk is no answer", metadata: Self.metadata(starter))
                continue
            }
            loaded[thread.id] = FAQBook.Post(
                title: thread.name ?? "", tagIDs: thread.appliedTags ?? [], starter: starter.content, attachments: Self.files(of: starter),
                updatedAt: Self.editedAt(starter))
            // A book with nothing to suggest yet (the first start) suggests as the read goes, a
            // hundred answers at a time, instead of when it ends.
            if !held, loaded.count.isMultiple(of: Self.coldBatch) { await book.add(loaded, at: time.now()) }
        }
        await book.load(loaded, at: time.now())
        snapshots?.keep()
        return await book.count
    }

    /// One post read again (another replica heard it change): its title, tags and starter, or
    /// gone when Discord says so.
    func refresh(_ thread: String) async {
        do {
            try await Deadline.within(.seconds(30)) {
                let channel: DiscordChannel
                do {
                    channel = try await discord.channel(thread)
                } catch let error as DiscordError {
                    guard case .api(let failure) = error, failure.status == 404 else { throw error }
                    await book.remove(thread)
                    return
                } catch {
                    throw error
                }
                guard channel.parentId == forumID else { return }
                if await !book.knowsTags(channel.appliedTags ?? []) { try? await refreshTags() }
                await book.post(thread, title: channel.name ?? "", tagIDs: channel.appliedTags ?? [], at: time.now())
                if let message = try await starter(of: thread) {
                    try await take(message, post: thread)
                } else {
                    await book.remove(thread)
                }
            }
        } catch {
            logger.warning("Could not read a FAQ post another replica heard change", metadata: ["thread": "\(thread)", "error": "\(error)"])
        }
    }

    /// A post's starter into the book: the answer when its author may answer, otherwise none.
    func take(_ message: DiscordMessage, post thread: String) async throws {
        if try await authors.mayAnswer(message) {
            await book.starter(thread, content: message.content, attachments: Self.files(of: message), editedAt: Self.editedAt(message), at: time.now())
        } else {
            logger.notice("A FAQ post by a member who may not use the desk is no answer", metadata: Self.metadata(message))
            await book.withhold(thread)
        }
    }

    private static func metadata(_ message: DiscordMessage) -> Logger.Metadata {
        ["thread": "\(message.channelId)", "author": "\(message.author.id)"]
    }

    /// When Discord says the message last changed: its edit, or its posting.
    static func editedAt(_ message: DiscordMessage) -> Date? {
        let text = message.editedTimestamp ?? message.timestamp
        // Discord's stamps carry microseconds and a `+00:00` zone; some have no fraction.
        let precise = Date.ISO8601FormatStyle.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true)
            .timeSeparator(.colon).timeZone(separator: .colon)
        return (try? Date(text, strategy: precise)) ?? (try? Date(text, strategy: .iso8601)) ?? Snowflake(message.id)?.date
    }

    static func files(of message: DiscordMessage) -> [MirroredMessage.Attachment] {
        message.attachments.compactMap { attachment in
            Snowflake(attachment.id).map {
                MirroredMessage.Attachment(
                    id: $0, filename: attachment.filename, size: attachment.size, contentType: attachment.contentType, url: attachment.url,
                    proxyURL: attachment.proxyUrl, width: attachment.width, height: attachment.height)
            }
        }
    }

    func refreshTags() async throws {
        let forum = try await discord.channel(forumID)
        await book.setTags(Dictionary((forum.availableTags ?? []).map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first }))
    }

    /// A post's starter message (its id is the thread's); nil when it is gone.
    func starter(of thread: String) async throws -> DiscordMessage? {
        do {
            return try await discord.message(thread, in: thread)
        } catch .api(let failure) where failure.status == 404 {
            return nil
        }
    }
}
