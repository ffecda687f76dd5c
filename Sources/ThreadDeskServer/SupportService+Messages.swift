import Crypto
import DiscordREST
import Foundation
import HTTPTypes
import Prometheus
import ThreadDeskCore
import ThreadDeskStore

extension SupportService {
    /// Sends the user's text to their thread. A retry with the same idempotency key answers what
    /// the first attempt answered and posts nothing new; a retry after a part-way failure posts
    /// only the parts still missing.
    func postMessage(_ text: String, idempotencyKey: String, for id: UserID, from address: String) async throws -> StoredResponse {
        let fingerprint = SHA256.hash(data: Data(("message\u{0}" + text).utf8)).map { String(format: "%02x", $0) }.joined()
        return try await withUser(id, idempotencyKey: idempotencyKey) { context in
            if let stored = context.storedResponse {
                guard stored.fingerprint == fingerprint else {
                    throw APIError(.unprocessableContent, "idempotency_key_reused", "This Idempotency-Key was used for a different message.")
                }
                return stored
            }
            let parts = MessageText.split(text)
            var posted: [DiscordMessage] = []
            var earlier = context.record?.pendingPost?.idempotencyKey == idempotencyKey ? context.record?.pendingPost?.postedMessageIDs ?? [] : []
            for (index, part) in parts.enumerated() {
                if !earlier.isEmpty {
                    earlier.removeFirst()
                    continue
                }
                let nonce = Self.nonce("message", id: id, idempotencyKey, String(index))
                // Each part on its own: a part may begin with a note marker where the text was cut.
                posted.append(
                    try await post(.init(content: NoteMarkers.postable(userText: part), nonce: nonce), in: &context, from: address))
                if parts.count > 1 {
                    let done = (context.record?.pendingPost?.postedMessageIDs ?? []) + [posted.last!.id]
                    context.record?.pendingPost = PendingPost(idempotencyKey: idempotencyKey, postedMessageIDs: done)
                }
            }
            let ids = context.record?.pendingPost?.postedMessageIDs ?? posted.map(\.id)
            context.record?.pendingPost = nil
            metrics.messagesPosted.increment()
            guard let first = posted.first else {
                throw APIError(.conflict, "retry_in_progress", "This message was already sent; fetch messages to see it.")
            }
            var message = APIMessage(first, author: .user)
            if parts.count > 1 {
                message.id = ids.first ?? first.id
                message.content = text
                message.partIds = ids
            }
            let response = StoredResponse(status: 201, body: try JSONEncoder.api.encode(message), fingerprint: fingerprint)
            context.response = response
            return response
        }
    }

    /// The user's visible messages, oldest first. Discord pages newest first and the user cannot
    /// see everything in the thread, so this pages Discord until it has `limit` visible ones.
    func messages(for id: UserID, after: String?, before: String?, limit: Int) async throws -> APIMessagePage {
        guard let thread = try await store.user(id)?.threadID else { return APIMessagePage(messages: [], hasMore: false) }
        let bot = try await discordCall { try await botUserID() }
        var visible: [APIMessage] = []
        var more = false
        do {
            if let after {
                // Forwards from `after`, stopping at `before` if given.
                var cursor = after
                paging: while true {
                    let page = try await discord.messages(in: thread, after: cursor, limit: 100).sorted { $0.id.snowflakeLess($1.id) }
                    for message in page {
                        if let before, !message.id.snowflakeLess(before) { break paging }
                        if case .visible(let author) = MessageVisibility(of: message, botUserID: bot) {
                            if visible.count == limit { more = true; break paging }
                            visible.append(APIMessage(message, author: author))
                        }
                    }
                    guard page.count == 100, let last = page.last else { break }
                    cursor = last.id
                }
            } else {
                // Backwards from `before` (or the newest).
                var cursor = before
                paging: while true {
                    let page = try await discord.messages(in: thread, before: cursor, limit: 100)
                    for message in page {
                        if case .visible(let author) = MessageVisibility(of: message, botUserID: bot) {
                            if visible.count == limit { more = true; break paging }
                            visible.append(APIMessage(message, author: author))
                        }
                    }
                    guard page.count == 100, let last = page.last else { break }
                    cursor = last.id
                }
                visible.reverse()
            }
        } catch .api(let error) where error.threadIsGone {
            // Deleted in Discord: nothing to show until the next message starts a new thread.
            return APIMessagePage(messages: [], hasMore: false)
        } catch {
            throw APIError.from(error)
        }
        try await markRead(visible, for: id)
        return APIMessagePage(messages: visible, hasMore: more)
    }

    /// Remembers the newest support message the user has now seen (the push badge counts from it).
    private func markRead(_ messages: [APIMessage], for id: UserID) async throws {
        guard let newest = messages.last(where: { $0.author == .support })?.id else { return }
        let current = try await store.user(id)?.lastReadMessageID
        guard current.map({ $0.snowflakeLess(newest) }) ?? true else { return }
        try await withUser(id) { context in
            if context.record?.lastReadMessageID.map({ $0.snowflakeLess(newest) }) ?? true {
                context.record?.lastReadMessageID = newest
                context.record?.unreadCount = 0
            }
        }
    }

    /// Runs Discord calls, reporting their failure as the API's error.
    func discordCall<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as DiscordError {
            throw APIError.from(error)
        }
    }
}

extension String {
    /// Snowflakes compare as numbers: a shorter id is an older one.
    func snowflakeLess(_ other: String) -> Bool {
        count != other.count ? count < other.count : self < other
    }

    var isSnowflake: Bool { (1...20).contains(utf8.count) && allSatisfy { $0.isASCII && $0.isNumber } && UInt64(self) != nil }
}

extension JSONEncoder {
    static let api: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
