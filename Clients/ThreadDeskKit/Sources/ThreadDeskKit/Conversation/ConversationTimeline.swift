/// The messages of a conversation in the order a screen shows them: the server's, by id (ids
/// grow with time), then the ones still on the device in the order they were written.
///
/// An event touches one message: found by binary search and replaced, or inserted where it
/// belongs, never a re-sort of the whole conversation; a page is merged in one pass.
public struct ConversationTimeline: Sendable, Hashable {
    /// The server's messages first (ascending ids), then the device's (``confirmedCount`` on).
    public private(set) var messages: [ConversationMessage] = []
    /// How many of ``messages`` are the server's.
    public private(set) var confirmedCount = 0

    public init() {}

    public init(_ messages: [ConversationMessage]) {
        merge(messages.filter(\.isConfirmed))
        for message in messages where !message.isConfirmed { appendLocal(message) }
    }

    /// The newest message the server has, and the oldest one held.
    public var newestConfirmed: ConversationMessage? { confirmedCount > 0 ? messages[confirmedCount - 1] : nil }
    public var oldestConfirmed: ConversationMessage? { confirmedCount > 0 ? messages[0] : nil }

    /// Whether snowflake `a` is older than `b` (digits: the shorter is smaller).
    public static func precedes(_ a: String, _ b: String) -> Bool {
        let (x, y) = (a.utf8.count, b.utf8.count)
        // Digits only: String's ASCII comparison is a byte comparison, and the fastest one.
        return x != y ? x < y : a < b
    }

    /// Where `id` is among the server's messages, or where it would go.
    func position(of id: String) -> (index: Int, found: Bool) {
        var low = 0
        var high = confirmedCount
        while low < high {
            let middle = (low + high) / 2
            let other = messages[middle].id
            if other == id { return (middle, true) }
            if Self.precedes(other, id) { low = middle + 1 } else { high = middle }
        }
        return (low, false)
    }

    public func message(id: String) -> ConversationMessage? {
        if !ConversationMessage.isLocal(id) {
            let (index, found) = position(of: id)
            if found { return messages[index] }
        }
        return messages[confirmedCount...].first { $0.id == id }
    }

    /// Adds or replaces one of the server's messages. Returns whether anything changed.
    @discardableResult
    public mutating func upsert(_ message: ConversationMessage) -> Bool {
        let (index, found) = position(of: message.id)
        if found {
            guard messages[index] != message else { return false }
            messages[index] = message
        } else {
            messages.insert(message, at: index)
            confirmedCount += 1
        }
        return true
    }

    /// Merges a page of the server's messages (any order, any overlap with what is held) in
    /// one pass over the conversation.
    public mutating func merge(_ page: [ConversationMessage]) {
        var fresh: [ConversationMessage] = []
        for message in page {
            let (index, found) = position(of: message.id)
            if found {
                if messages[index] != message { messages[index] = message }
            } else {
                fresh.append(message)
            }
        }
        guard !fresh.isEmpty else { return }
        fresh.sort { Self.precedes($0.id, $1.id) }
        // A page repeated within itself: each id once.
        var unique: [ConversationMessage] = []
        unique.reserveCapacity(fresh.count)
        for message in fresh where unique.last?.id != message.id { unique.append(message) }
        if let newest = newestConfirmed, !Self.precedes(newest.id, unique[0].id) {
            if let oldest = oldestConfirmed, Self.precedes(unique[unique.count - 1].id, oldest.id) {
                messages.insert(contentsOf: unique, at: 0)
            } else {
                // Only what lies from the oldest new message on is rebuilt (after a reconnect:
                // the newest few), the rest stays where it is.
                let start = position(of: unique[0].id).index
                var merged: [ConversationMessage] = []
                merged.reserveCapacity(confirmedCount - start + unique.count)
                var (i, j) = (start, 0)
                while i < confirmedCount || j < unique.count {
                    if j == unique.count || (i < confirmedCount && Self.precedes(messages[i].id, unique[j].id)) {
                        merged.append(messages[i])
                        i += 1
                    } else {
                        merged.append(unique[j])
                        j += 1
                    }
                }
                messages.replaceSubrange(start..<confirmedCount, with: merged)
            }
        } else {
            messages.insert(contentsOf: unique, at: confirmedCount)
        }
        confirmedCount += unique.count
    }

    /// Removes a message, the server's or the device's. Returns whether it was there.
    @discardableResult
    public mutating func remove(id: String) -> Bool {
        if !ConversationMessage.isLocal(id) {
            let (index, found) = position(of: id)
            if found {
                messages.remove(at: index)
                confirmedCount -= 1
                return true
            }
        }
        guard let index = messages[confirmedCount...].firstIndex(where: { $0.id == id }) else { return false }
        messages.remove(at: index)
        return true
    }

    /// Adds a message still on the device, after everything else.
    public mutating func appendLocal(_ message: ConversationMessage) {
        if let index = messages[confirmedCount...].firstIndex(where: { $0.id == message.id }) {
            messages[index] = message
        } else {
            messages.append(message)
        }
    }

    /// Changes a message still on the device. Returns whether it was there.
    @discardableResult
    public mutating func updateLocal(id: String, _ change: (inout ConversationMessage) -> Void) -> Bool {
        guard let index = messages[confirmedCount...].firstIndex(where: { $0.id == id }) else { return false }
        change(&messages[index])
        return true
    }

    /// A message of the device the server now has: the device's copy gives way to the server's.
    public mutating func confirm(localID: String, as message: ConversationMessage) {
        remove(id: localID)
        upsert(message)
    }

    /// The user's message came from the server (its stream) before the answer to its send: the
    /// device's copy of the same words gives way, so the screen never shows it twice.
    @discardableResult
    public mutating func dropLocalCopy(of message: ConversationMessage) -> Bool {
        guard message.isFromUser, let index = messages[confirmedCount...].firstIndex(where: {
            $0.delivery == .pending && $0.text == message.text && $0.files.count == message.files.count
        }) else { return false }
        messages.remove(at: index)
        return true
    }

    /// Keeps the server's messages of `page` only (after a reset: what the server has now), and
    /// the device's.
    public mutating func replaceConfirmed(with page: [ConversationMessage]) {
        let local = Array(messages[confirmedCount...])
        messages = local
        confirmedCount = 0
        merge(page)
    }

    /// The newest `count` of the server's messages and all of the device's (what a device store keeps).
    public func keepingNewest(_ count: Int) -> ConversationTimeline {
        guard confirmedCount > count else { return self }
        var kept = self
        kept.messages.removeFirst(confirmedCount - count)
        kept.confirmedCount = count
        return kept
    }
}
