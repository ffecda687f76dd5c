import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// The one way facts from Discord enter the mirror — the answers to our own posts, gateway events
/// and REST pages alike — merged one thread at a time under its owner's lock. A push is decided
/// here, when a visible support reply enters the mirror for the first time, and nowhere else.
/// What it took in, it announces to its listeners (live streams, pushes, status tags).
struct MirrorIngestion: Sendable {
    let store: any UserRecords & MirrorStore & OutboxStore
    let bot: BotIdentity
    /// The name each app's automatic answers are posted under (`AssistSettings.name`).
    let assistantNames: [AppID: AssistantName]
    /// Which replies wait for a push; nil when pushes are off.
    let pushRule: PushRule?
    /// Told of every merge that changed something, in this order.
    let listeners: [any MirrorListener]
    /// Told of every merge that took in a message the user can see, and awaited, before the listeners.
    let recorders: [any MirrorRecorder]
    let now: @Sendable () -> Date
    /// Told of what the user sees change, once stored (the signed webhooks); nil: nobody. Set by
    /// the root once the webhooks are built.
    var shownChanges: (any ShownChangeRecorder)? = nil

    /// - Parameters:
    ///   - store: Where the mirror and the users are kept.
    ///   - bot: The bot's id (its posts are the user's own messages).
    ///   - assistantNames: Each app's assistant name (its webhook posts are automatic answers).
    ///   - pushRule: Which first-seen replies wait for a push; nil when pushes are off.
    ///   - listeners: Told of what each merge took in.
    ///   - recorders: Keep what each merge's visible messages did to the conversation, under the lock.
    ///   - now: The server's clock, as a date.
    init(
        store: any UserRecords & MirrorStore & OutboxStore, bot: BotIdentity, assistantNames: [AppID: AssistantName] = [:], pushRule: PushRule?,
        listeners: [any MirrorListener] = [], recorders: [any MirrorRecorder] = [], now: @escaping @Sendable () -> Date
    ) {
        (self.store, self.bot, self.assistantNames, self.pushRule, self.listeners, self.now) = (store, bot, assistantNames, pushRule, listeners, now)
        self.recorders = recorders
    }

    /// Merges `facts` about `thread` into the mirror and tells the listeners what it took in.
    ///
    /// Discord's posts of a message the outbox still keeps (queued, or failed after its first
    /// posts reached Discord) are taken in only by the delivery that finishes it (`delivering`):
    /// a gateway echo or a read of Discord in between would show its first post as the whole
    /// message, sent, while the rest waits.
    ///
    /// - Parameters:
    ///   - facts: What Discord said of the thread's messages, in any order.
    ///   - thread: The thread they belong to; facts of any other user's thread are ignored.
    ///   - record: The thread's owner as it stands under the owner's lock, which the caller holds.
    ///   - delivering: The outbox's message whose delivery these facts finish.
    /// - Returns: The changes made, oldest message first.
    /// - Throws: The store's errors; nothing is announced then.
    @discardableResult
    func apply(_ facts: [MirrorFact], thread: Snowflake, record: UserRecord, delivering: Snowflake? = nil) async throws -> [MirrorChange] {
        guard !facts.isEmpty else { return [] }
        var facts = try await translated(facts, owner: record.id)
        // Only the owner's thread: the one the record names, or one mirrored for this user before.
        // An owner looked up before the lock may be gone since (erased), its id claimed afresh:
        // the old conversation must not flow into the new user's mirror.
        let mirrored = try await store.mirrorThread(thread)
        guard record.threadID == thread.description || mirrored?.owner == record.id else { return [] }
        let messages = facts.compactMap { if case .message(let message) = $0 { message } else { nil } }
        let wholes = Set(messages.map { $0.partOf ?? $0.id })
        var current: [Snowflake: MirroredMessage] = [:]
        for message in try await store.mirroredMessages(Array(Set(facts.map(\.messageID)).union(wholes))) { current[message.id] = message }
        let kept = Set(wholes.filter { $0 != delivering && current[$0].map { $0.author == .user && $0.delivery != .sent } == true })
        if !kept.isEmpty {
            facts.removeAll { if case .message(let message) = $0 { kept.contains(message.partOf ?? message.id) } else { false } }
        }
        var written: [Snowflake: MirroredMessage] = [:]
        var changes: [MirrorChange] = []
        /// Messages whose change the user can see, in the order their events go out.
        var seen: [Snowflake] = []
        /// Of those, the ones the user could not see before.
        var appeared: Set<Snowflake> = []
        /// The user's messages that reached Discord in this merge (they were queued or failed).
        var delivered: Set<Snowflake> = []
        var pending = false
        /// What the user sees change, for `shownChanges`.
        var shown: [ShownChange] = []
        let time = now()
        // Oldest first (the merge does not care about order; pushes go out in this one).
        for fact in facts.enumerated().sorted(by: { ($0.element.messageID, $0.offset) < ($1.element.messageID, $1.offset) }).map(\.element) {
            let before = current[fact.messageID]
            guard case (var next, let change)? = MirroredMessage.merge(fact, into: before) else { continue }
            if case .inserted(let message) = change, shouldPush(message, record) {
                next.push = .pending(attempts: 0, nextAttempt: time)
                pending = true
            }
            current[next.id] = next
            written[next.id] = next
            if let before, before.delivery != .sent, next.delivery == .sent { delivered.insert(next.id) }
            if change != nil, let told = ShownChange.between(before, next) { shown.append(told) }
            if let change {
                changes.append(change)
                if next.isShown || before?.isShown == true, !seen.contains(next.id) { seen.append(next.id) }
                if next.isShown, before?.isShown != true, next.shownSeq == 0 { appeared.insert(next.id) }
            }
        }
        // Each change the user can see gets the next number of the live-event sequence.
        for (id, number) in zip(seen, try await store.nextEventSequences(seen.count)) {
            written[id]?.eventSeq = number
            if appeared.contains(id) { written[id]?.shownSeq = number }
        }
        try await store.saveMirroredMessages(written.values.sorted { $0.id < $1.id })
        var state = mirrored ?? MirrorThread(id: thread, owner: record.id, complete: false, lastActivity: now())
        let before = state
        if let newest = written.values.filter({ !$0.deleted }).map(\.id).max(), state.newestSeen.map({ $0 < newest }) ?? true {
            state.newestSeen = newest
        }
        // The conversation's activity is what its user sees: a note (ThreadDesk's own erasure
        // note among them) keeps no user from retention.
        if !seen.isEmpty { state.lastActivity = now() }
        if state != before { try await store.saveMirrorThread(state) }
        if let shownChanges, !shown.isEmpty { await shownChanges.stored(shown, owner: record.id) }
        // Who spoke last among the messages seen for the first time: the conversation's status.
        let appearing = changes.compactMap { change -> MirroredMessage? in
            switch change {
            case .inserted(let message) where message.isShown: message
            // A message the outbox kept reached Discord now: there, the user spoke last.
            case .updated(let message) where message.isShown && delivered.contains(message.id): message
            default: nil
            }
        }.sorted { $0.id < $1.id }
        if !changes.isEmpty {
            let intake = MirrorIntake(
                owner: record.id, thread: thread, visibleToUser: !seen.isEmpty, newestShown: appearing.last, pushesPending: pending,
                shown: appearing)
            if !appearing.isEmpty { for recorder in recorders { await recorder.record(intake) } }
            for listener in listeners { listener.mirrorTookIn(intake) }
        }
        return changes
    }

    /// Facts with Discord's ids of the user's accepted messages (and of replies to them) under
    /// ThreadDesk's ids (`mirror_aliases`): the message keeps the id it was accepted with.
    private func translated(_ facts: [MirrorFact], owner: UserID) async throws -> [MirrorFact] {
        var candidates: Set<Snowflake> = []
        for fact in facts {
            switch fact {
            case .message(let message):
                if message.author == .user { candidates.insert(message.id) }
                if let reply = message.replyTo { candidates.insert(reply) }
            case .deleted(let id, _):
                candidates.insert(id)
            }
        }
        let hasNonce = facts.contains { if case .message(let message) = $0 { message.nonce != nil } else { false } }
        guard !candidates.isEmpty || hasNonce else { return facts }
        let aliases = candidates.isEmpty ? [:] : try await store.mirrorAliases(Array(candidates))
        // Read from Discord (no nonce) and no alias yet: perhaps a post the outbox just made.
        let unnamed = facts.compactMap { fact -> MirroredMessage? in
            guard case .message(let message) = fact, message.author == .user, message.visible, message.nonce == nil, aliases[message.id] == nil
            else { return nil }
            return message
        }
        let matched = try await outboxPosts(unnamed, owner: owner)
        guard !aliases.isEmpty || hasNonce || !matched.isEmpty else { return facts }
        var learned: [(discord: Snowflake, message: Snowflake)] = []
        var renamed: Set<Snowflake> = []
        var translated = facts.map { fact -> MirrorFact in
            switch fact {
            case .message(var message):
                // An outbox post's nonce names the accepted message, also before its alias is kept.
                let posted = message.nonce.flatMap(PostNonce.parse) ?? matched[message.id]
                message.nonce = nil
                if message.author == .user, let id = aliases[message.id] {
                    message.id = id
                    renamed.insert(id)
                } else if message.author == .user, let posted {
                    if posted.part == 0 {
                        learned.append((message.id, posted.id))
                        message.id = posted.id
                        renamed.insert(posted.id)
                    } else {
                        message.partOf = message.partOf ?? posted.id
                    }
                }
                if let reply = message.replyTo, let id = aliases[reply] { message.replyTo = id }
                return .message(message)
            case .deleted(let id, let thread):
                return .deleted(aliases[id] ?? id, thread: thread)
            }
        }
        // The files keep the ids the app was given when the message was accepted, as the message does.
        let withFiles = translated.compactMap { fact -> Snowflake? in
            if case .message(let message) = fact, renamed.contains(message.id), !message.attachments.isEmpty { message.id } else { nil }
        }
        if !withFiles.isEmpty {
            let kept = Dictionary(try await store.mirroredMessages(withFiles).map { ($0.id, $0.attachments) }, uniquingKeysWith: { first, _ in first })
            translated = translated.map { fact in
                guard case .message(var message) = fact, let ours = kept[message.id] else { return fact }
                message.attachments = Self.keepingIDs(message.attachments, of: ours)
                return .message(message)
            }
        }
        // Kept at once: a read of the thread before the delivery notes it must know the post as ours.
        for alias in learned { try await store.saveMirrorAlias(discordID: alias.discord, messageID: alias.message, owner: owner) }
        return translated
    }

    /// Discord's files of a post of the user's under the ids the app knows them by (`ours`): matched
    /// by name and size, else by place when there are as many; a file of no match keeps Discord's id.
    static func keepingIDs(_ incoming: [MirroredMessage.Attachment], of ours: [MirroredMessage.Attachment]) -> [MirroredMessage.Attachment] {
        var free = ours
        return incoming.enumerated().map { index, file in
            var file = file
            if let match = free.firstIndex(where: { $0.filename == file.filename && $0.size == file.size }) {
                file.id = free.remove(at: match).id
            } else if ours.count == incoming.count, let match = free.firstIndex(where: { $0.id == ours[index].id }) {
                file.id = free.remove(at: match).id
            }
            return file
        }
    }

    /// Tells the listeners of messages the outbox accepted (or changed while they wait), stored
    /// already: the user's streams have news; Discord has nothing yet, so nothing else does.
    func announceAccepted(owner: UserID, thread: Snowflake) {
        let intake = MirrorIntake(owner: owner, thread: thread, visibleToUser: true, newestShown: nil, pushesPending: false)
        for listener in listeners { listener.mirrorTookIn(intake) }
    }

    /// Saves `message` (a user's message the outbox keeps, changed: its text, its delivery) as
    /// the user's next visible change, and tells the listeners. The caller holds the user's lock.
    func saveOutboxChange(_ message: MirroredMessage, owner: UserID) async throws {
        var message = message
        let before = shownChanges == nil ? nil : try await store.mirroredMessages([message.id]).first
        guard let number = try await store.nextEventSequences(1).first else { return }
        message.eventSeq = number
        if message.shownSeq == 0, message.isShown { message.shownSeq = number }
        try await store.saveMirroredMessages([message])
        if let shownChanges, let told = ShownChange.between(before, message) { await shownChanges.stored([told], owner: owner) }
        announceAccepted(owner: owner, thread: message.threadID)
    }

    /// A user's message accepted into the outbox, its row `queued`: `shownChanges` hears of it in
    /// the accepting transaction.
    func recordAccepted(_ row: MirroredMessage, owner: UserID, in context: inout UserContext) async {
        for recorder in recorders { await recorder.accepted(row, owner: owner, in: &context) }
        shownChanges?.accepted(row, owner: owner, in: &context)
    }

    /// A first-seen visible support reply to a user with a device, recent enough to be news, and
    /// newer than what the design before the mirror had pushed already.
    private func shouldPush(_ message: MirroredMessage, _ record: UserRecord) -> Bool {
        guard let pushRule, message.isSupportReply, record.pushToken != nil else { return false }
        // A silent reply (`:cold:`) alerts nobody: a background push at most, when those are on.
        if NoteMarkers.isSilent(message.content), !pushRule.background { return false }
        guard message.id.date.timeIntervalSince(now()) > -(pushRule.maxAge / .seconds(1)) else { return false }
        if let floor = record.lastNotifiedMessageID.flatMap({ Snowflake($0) }), message.id <= floor { return false }
        return true
    }

    /// A post of ours, as Discord answered it, into the mirror of `record`'s thread (with the
    /// gateway it comes again; the merge makes that a no-op). The caller holds the user.
    func ingestOwn(_ posted: DiscordMessage, partOf: Snowflake? = nil, record: UserRecord?) async throws {
        guard let record, let thread = Snowflake(posted.channelId) else { return }
        try await apply(facts([posted], bot: try await bot.id(), owner: record.id, partOf: partOf), thread: thread, record: record)
    }

    /// The thread's owner: whoever has it now, or had it when it was mirrored.
    func owner(of thread: Snowflake) async throws -> UserID? {
        if let owner = try await store.userID(forThread: thread.description) { return owner }
        return try await store.mirrorThread(thread)?.owner
    }

    /// Facts from Discord messages of `owner`'s thread (skipping any whose ids are not snowflakes).
    func facts(_ messages: [DiscordMessage], bot: Snowflake, owner: UserID, partOf: Snowflake? = nil) -> [MirrorFact] {
        let assistant = assistantNames[owner.app]
        return messages.compactMap { MirroredMessage($0, bot: bot, assistant: assistant, partOf: partOf).map(MirrorFact.message) }
    }
}
