import DiscordREST
import Foundation
import HTTPTypes
import Logging
import Prometheus
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// The live side of the conversation that is not a stream: the user typing (shown in Discord),
/// an agent typing (shown to the user), and what the user has read.
struct LiveService: Sendable {
    let users: UserSerializer
    let store: any UserRecords & MirrorStore & QuotaBuckets
    let discord: DiscordClient<AnyClock>
    let bot: BotIdentity
    let ingestion: MirrorIngestion
    let hub: LiveHub
    let feed: LiveFeed
    let typingGate: TypingGate
    /// Turns for the streams being opened (`LiveSettings.openingAtOnce`).
    let openings: StreamOpenings
    /// Shows the user typing in Discord, outside the request.
    let typing: TypingRelay
    /// Read receipts shown in Discord; nil when switched off.
    let receipts: ReadReceipts?
    let settings: LiveSettings
    let metrics: ServerMetrics
    let logger: Logger
    let now: @Sendable () -> Date

    /// The user is typing: "typing…" in their thread, at most once per `typingInterval` per thread
    /// whatever the app sends (this process's gate first, then the store's bucket shared by every
    /// replica). Best effort: a failure is logged, never the app's problem.
    /// - Parameter record: The user typing; without a thread there is nowhere to show it.
    /// - Throws: The store's errors (its shared bucket).
    func userTyping(_ record: UserRecord) async throws {
        guard let thread = record.threadID, typingGate.admit(thread) else { return }
        let interval = settings.typingInterval
        guard try await store.takeToken("typing:\(thread)", limit: QuotaLimit(1, per: interval)) == nil else { return }
        typing.relay(thread)
    }

    /// The user has read up to `messageId` (a message of their conversation they can see). The
    /// mark never moves backwards; a move reaches their other streams and, coalesced, Discord.
    /// - Parameters:
    ///   - messageID: The newest message the user saw.
    ///   - user: The user.
    /// - Returns: The read state after the mark.
    /// - Throws: `SupportFailure.notInConversation` for a message the user cannot see in their
    ///   conversation, and the store's errors.
    func markRead(_ messageID: Snowflake, for user: UserID) async throws -> ReadState {
        let moved = try await users.withUser(user) { context -> Bool in
            guard var record = context.record, let message = try await store.mirroredMessages([messageID]).first, message.isShown,
                try await ingestion.owner(of: message.threadID) == user
            else {
                throw SupportFailure.notInConversation
            }
            if let current = record.lastReadMessageID.flatMap({ Snowflake($0) }), current >= messageID { return false }
            record.lastReadMessageID = messageID.description
            record.live.readSeq = try await store.nextEventSequences(1)[0]
            record.updatedAt = now()
            context.record = record
            return true
        }
        if moved {
            hub.changed(user)
            receipts?.schedule(user)
        }
        return try await readState(user)
    }

    /// The user's read mark and how many messages they have not read.
    /// - Parameter user: The user.
    /// - Throws: `SupportFailure.notAuthenticated` when the user is gone, and the store's errors.
    func readState(_ user: UserID) async throws -> ReadState {
        guard let record = try await store.user(user) else { throw SupportFailure.notAuthenticated }
        return ReadState(lastReadMessageId: record.lastReadMessageID, count: try await feed.unreadCount(record))
    }

    /// An agent types in a thread (gateway TYPING_START): a `typing` event on its owner's streams.
    /// The bot's own typing (the user's, relayed) is not news to the user. Best effort: a
    /// failure is logged.
    /// - Parameters:
    ///   - channelID: The thread typed in; a channel that is no user's thread is ignored.
    ///   - userID: Who types.
    func relayTyping(channelID: String, userID: String) async {
        guard let thread = Snowflake(channelID) else { return }
        do {
            guard try await userID != bot.id().description, let owner = try await ingestion.owner(of: thread) else { return }
            hub.typing(owner, until: now().addingTimeInterval(settings.typingExpiry / .seconds(1)))
        } catch {
            logger.info("Could not relay an agent's typing", metadata: ["error": "\(error)"])
        }
    }
}
