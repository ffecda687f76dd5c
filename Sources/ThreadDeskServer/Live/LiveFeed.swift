import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// One event of `GET /v1/events`. Its id is the stream position after it: the store-wide
/// sequence number of the change it reports, so `Last-Event-ID` says exactly what a client has.
struct LiveEvent: Sendable, Hashable {
    var id: Int64
    var name: String
    /// One line of JSON.
    var data: String

    var text: String { "id: \(id)\nevent: \(name)\ndata: \(data)\n\n" }

    static func encoded(_ id: Int64, _ name: LiveEventName, _ value: some Encodable) -> LiveEvent {
        let data = (try? JSONEncoder.api.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return LiveEvent(id: id, name: name.rawValue, data: data)
    }
}

/// Turns the mirror and the read state into events: what changed after a position, and where a
/// new stream starts. Live wake-ups and `Last-Event-ID` replays take the same path.
struct LiveFeed: Sendable {
    let store: any UserRecords & MirrorStore
    /// A replay longer than this is answered with `reset` (refetch) instead.
    var replayLimit = 1000

    private static let page = 200

    struct Batch: Sendable {
        var events: [LiveEvent]
        var position: Int64
        /// More changed than `limit` allowed.
        var overflow = false
    }

    /// Where a stream opened with `lastEventID` (nil for a fresh start) begins, and its first
    /// events: what it missed (or `reset` when that cannot be told), then the unread count.
    func start(_ user: UserID, lastEventID: String?) async throws -> Batch {
        guard let record = try await store.user(user) else { return Batch(events: [], position: 0) }
        let latest = max(try await store.latestEventSequence(owner: user), record.live.readSeq, record.live.ratingRequest?.seq ?? 0)
        if let lastEventID {
            if let position = Int64(lastEventID), (0...latest).contains(position) {
                let batch = try await events(user, after: position, limit: replayLimit)
                if !batch.overflow {
                    guard batch.events.last?.name != "unread" else { return batch }
                    return Batch(events: batch.events + [try await unread(record, at: batch.position)], position: batch.position)
                }
            }
            let reset = LiveEvent.encoded(latest, .reset, StreamReset(reason: "The events after that id cannot be replayed; fetch the messages again."))
            return Batch(events: [reset, try await unread(record, at: latest)] + ratingRequest(record, at: latest), position: latest)
        }
        // A stream that opens while a rating waits hears of it.
        return Batch(events: [try await unread(record, at: latest)] + ratingRequest(record, at: latest), position: latest)
    }

    /// Everything `user` could see change after `position`, in order: messages created, edited
    /// or deleted (notes never: they are not visible), the read mark, and the new unread count
    /// when support messages or the read mark changed.
    func events(_ user: UserID, after position: Int64, limit: Int = .max) async throws -> Batch {
        guard let record = try await store.user(user) else { return Batch(events: [], position: position) }
        var events: [LiveEvent] = []
        var cursor = position
        var unreadChanged = false
        var read = 0
        while true {
            let rows = try await store.mirrorEvents(owner: user, after: cursor, limit: Self.page)
            for message in rows {
                cursor = max(cursor, message.eventSeq)
                read += 1
                if message.author != .user { unreadChanged = true }
                if message.isShown {
                    events.append(.encoded(message.eventSeq, message.shownSeq > position ? .messageCreated : .messageUpdated, SupportMessage(message)))
                } else if message.shownSeq <= position {
                    events.append(.encoded(message.eventSeq, .messageDeleted, MessageDeleted(id: message.id.description)))
                }
                // Shown and gone again since `position`: the client never had it.
            }
            if read > limit { return Batch(events: [], position: position, overflow: true) }
            if rows.count < Self.page { break }
        }
        if record.live.readSeq > position, let lastRead = record.lastReadMessageID {
            events.append(.encoded(record.live.readSeq, .read, ReadMark(messageId: lastRead)))
            events.sort { $0.id < $1.id }
            cursor = max(cursor, record.live.readSeq)
            unreadChanged = true
        }
        if let pending = record.live.ratingRequest, pending.seq > position {
            events.append(.encoded(pending.seq, .ratingRequested, pending.wire))
            events.sort { $0.id < $1.id }
            cursor = max(cursor, pending.seq)
        }
        if unreadChanged { events.append(try await unread(record, at: cursor)) }
        return Batch(events: events, position: cursor)
    }

    /// The rating waiting for the user, as the event a stream opens with.
    private func ratingRequest(_ record: UserRecord, at position: Int64) -> [LiveEvent] {
        record.live.ratingRequest.map { [.encoded(position, .ratingRequested, $0.wire)] } ?? []
    }

    private func unread(_ record: UserRecord, at position: Int64) async throws -> LiveEvent {
        .encoded(position, .unread, UnreadCount(count: try await unreadCount(record)))
    }

    /// Visible support messages newer than what the user has read, in their current thread.
    func unreadCount(_ record: UserRecord) async throws -> Int {
        guard let thread = record.threadID.flatMap({ Snowflake($0) }) else { return 0 }
        return try await store.supportMessageCount(thread: thread, after: record.lastReadMessageID.flatMap { Snowflake($0) })
    }
}
