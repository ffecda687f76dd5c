import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// The reference system's users: known by id alone, never by a token, and never a user of `/v1`.
struct LegacyService: Sendable {
    let users: UserSerializer
    let store: any UserRecords & GlobalValues & MirrorStore
    let sync: MirrorSync
    /// The author of the user's messages Discord has not got yet.
    let bot: BotIdentity
    let now: @Sendable () -> Date

    /// Legacy users exist from their first call on; they have no token. A user of `/v1` (one
    /// with a token) is never reachable with the legacy key, whatever the shape of their id.
    /// - Parameter id: The reference system's user id.
    /// - Throws: `SupportFailure.notALegacyUser` for a user of `/v1`, and the store's errors.
    func ensureUser(_ id: UserID) async throws {
        try await users.withUser(id) { context in
            try Self.refuseV1User(context.record)
            if context.record == nil {
                // The reference system may have made this user's thread: the first post looks for it.
                try await store.setGlobalValue(ThreadNotes.unrecordedThreadKey(id), to: ThreadNotes.legacyNote)
                context.record = UserRecord(id: id, now: now())
            }
            // A legacy call is a use: no /v1 claim with the app key alone takes the id from now on.
            if context.record?.history.contains(.used) == false { context.record?.history.insert(.used) }
        }
    }

    /// Refuses a user of `/v1` on the legacy routes.
    /// - Parameter record: The user's record, nil when unknown (no refusal).
    /// - Throws: `SupportFailure.notALegacyUser` for a record that ever had a token or used `/v1`.
    static func refuseV1User(_ record: UserRecord?) throws {
        // Once a /v1 user, always one: signing out of every session does not hand the id back.
        if let record, record.tokenHash != nil || record.history.contains(.v1) { throw SupportFailure.notALegacyUser }
    }

    /// Visible messages after `after` (at most 100), newest first as Discord lists them, from the
    /// mirror: those the outbox keeps among them (accepted, Discord not having them yet; a first
    /// message, before the user's thread exists) under their accepted ids, with the bot as author,
    /// as they will be once delivered. A client that sends and lists at once sees what it sent.
    /// - Parameters:
    ///   - id: The reference system's user id.
    ///   - after: Only messages after this id; nil for the newest 100.
    /// - Throws: `SupportFailure.notALegacyUser` for a user of `/v1`, `DiscordError` when the
    ///   mirror must catch up and cannot, and the store's errors.
    func messages(for id: UserID, after: Snowflake?) async throws -> [LegacyMessage] {
        let record = try await store.user(id)
        try Self.refuseV1User(record)
        guard let record else { return [] }
        let rows: [MirroredMessage]
        if let thread = record.threadID.flatMap({ Snowflake($0) }) {
            guard try await sync.ensureCurrent(thread, owner: id) else { return [] }
            let cursor: MirrorCursor = after.map { .after($0, before: nil) } ?? .before(nil)
            rows = try await store.mirrorPage(thread: thread, cursor, limit: 100).messages
        } else if record.pendingThread != nil {
            // Waiting for the user's first thread: in the placeholder, or in the thread a delivery
            // is making. Every thread of the user's, then: few messages, all in the store.
            let all = try await store.conversation(of: id, after: nil, limit: 1000).messages.filter { message in after.map { message.id > $0 } ?? true }
            rows = after != nil ? Array(all.prefix(100)) : Array(all.suffix(100))
        } else {
            return []
        }
        var author: (id: Snowflake, username: String)?
        if rows.contains(where: { $0.author == .user && $0.authorID == nil }) { author = try await bot.user() }
        return rows.reversed().map { LegacyMessage($0, bot: author) }
    }
}
