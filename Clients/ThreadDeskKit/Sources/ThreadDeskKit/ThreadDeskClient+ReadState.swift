import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The user's side of the conversation's state: typing, and what they have read.
extension ThreadDeskClient {
    /// The user is typing: shows "typing…" to support. Call it on every keystroke; at most one
    /// report goes out per `typingInterval`. Best effort: failures are ignored.
    public func typing() async {
        let now = Time.now
        if let lastTyping, now < lastTyping + configuration.typingInterval { return }
        lastTyping = now
        _ = try? await authorized { token throws(ThreadDeskError) in
            _ = try await transport.send(request("v1/typing", method: "POST", token: token))
        }
    }

    /// The user has read everything up to `messageID`; the unread count and the push badge
    /// follow, and support sees a read receipt.
    @discardableResult
    public func markRead(_ messageID: String) async throws(ThreadDeskError) -> ReadState {
        try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
            var request = request("v1/read", method: "POST", token: token)
            try encode(ReadRequest(messageId: messageID), into: &request)
            return try decode(ReadState.self, from: try await transport.send(request))
        }
    }

    /// Unread support messages and the read mark.
    public func readState() async throws(ThreadDeskError) -> ReadState {
        try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
            try decode(ReadState.self, from: try await transport.send(request("v1/unread", token: token)))
        }
    }

    /// Unread support messages.
    public func unreadCount() async throws(ThreadDeskError) -> Int { try await readState().count }
}
