import Foundation

/// A message as a chat screen shows it: the server's messages and the ones still on the device.
public struct ConversationMessage: Sendable, Codable, Hashable, Identifiable {
    public enum Author: Sendable, Codable, Hashable {
        /// The app's user (this device or another of theirs).
        case user
        /// Support, with the agent's display name when the server gave one.
        case support(name: String?)
    }

    /// Where a message stands on its way to support.
    public enum Delivery: Sendable, Codable, Hashable {
        /// Still on the device: the server has not confirmed it (no network, or the answer was
        /// lost); it goes out by itself when the connection is back.
        case pending
        /// ThreadDesk has it; support does not yet (Discord is slow or down).
        case queued
        /// In the support thread.
        case sent
        /// Refused for good, with why: ``SupportConversation/retry(_:)`` sends it again,
        /// ``SupportConversation/edit(_:to:)`` with another text, ``SupportConversation/delete(_:)`` withdraws it.
        case failed(reason: String?)
    }

    /// A file of a message.
    public struct File: Sendable, Codable, Hashable, Identifiable {
        public var id: String
        public var filename: String
        public var size: Int
        public var contentType: String?
        /// Where the bytes are (ThreadDesk's, fetched with the session's token:
        /// ``SupportConversation/data(for:)``); nil while the file is still on the device.
        public var url: URL?
        public var width: Int?
        public var height: Int?
        /// 0 while the file is on its way, nil once the server has it.
        public var uploadProgress: Double?

        public var isImage: Bool { contentType?.hasPrefix("image/") == true }
    }

    /// The server's id (a snowflake, as digits), or the outbox key while ``Delivery/pending``.
    public var id: String
    public var text: String
    public var files: [File]
    public var author: Author
    public var date: Date
    public var delivery: Delivery
    public var isEdited: Bool
    /// The message this one answers.
    public var replyTo: String?

    public var isFromUser: Bool { author == .user }
    /// Whether the server has it (its id is the server's).
    public var isConfirmed: Bool { delivery != .pending && !(Self.isLocal(id)) }

    static func isLocal(_ id: String) -> Bool { id.isEmpty || !id.utf8.allSatisfy { (0x30...0x39).contains($0) } }
}

extension ConversationMessage {
    /// The server's message, its file URLs made absolute against `server`.
    init(_ message: SupportMessage, server: URL) {
        id = message.id
        text = message.content
        files = message.attachments.map { file in
            File(
                id: file.id, filename: file.filename, size: file.size, contentType: file.contentType,
                url: Self.absolute(file.url, against: server), width: file.width, height: file.height, uploadProgress: nil)
        }
        author = message.author == .user ? .user : .support(name: message.authorName)
        date = Timestamp.date(message.createdAt) ?? Date(timeIntervalSince1970: 0)
        switch message.delivery ?? .sent {
        case .queued: delivery = .queued
        case .sent: delivery = .sent
        case .failed: delivery = .failed(reason: message.deliveryError?.message)
        }
        isEdited = message.editedAt != nil
        replyTo = message.replyTo
    }

    /// A message still in the outbox.
    init(pending entry: OutboxEntry) {
        id = entry.id
        text = entry.text
        files = entry.files.enumerated().map { index, file in
            File(
                id: "\(entry.id)-\(index)", filename: file.filename, size: file.data.count, contentType: file.contentType, url: nil,
                uploadProgress: 0)
        }
        author = .user
        date = entry.createdAt
        delivery = .pending
        isEdited = false
        replyTo = nil
    }

    static func absolute(_ path: String, against server: URL) -> URL? {
        if let url = URL(string: path), url.scheme != nil { return url }
        let relative = path.hasPrefix("/") ? String(path.dropFirst()) : path
        guard var components = URLComponents(url: server, resolvingAgainstBaseURL: false) else { return nil }
        let base = components.path.hasSuffix("/") ? components.path : components.path + "/"
        let parts = relative.split(separator: "?", maxSplits: 1)
        components.path = base + (parts.first.map(String.init) ?? "")
        components.percentEncodedQuery = parts.count > 1 ? String(parts[1]) : nil
        return components.url
    }
}

/// The API's timestamps (RFC 3339: `2026-11-28T17:25:57.123+00:00`, `…Z`), read without a
/// formatter per message: a page of a hundred costs microseconds, not milliseconds.
enum Timestamp {
    static func date(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<start + count] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == 0x2D, bytes[7] == 0x2D, bytes[10] == 0x54 || bytes[10] == 0x74 || bytes[10] == 0x20,
            bytes[13] == 0x3A, bytes[16] == 0x3A,
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction = 0.0
        if index < bytes.count, bytes[index] == 0x2E {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        var offset = 0
        switch bytes[index] {
        case 0x5A, 0x7A:
            guard index + 1 == bytes.count else { return nil }
        case 0x2B, 0x2D:
            guard index + 6 == bytes.count, bytes[index + 3] == 0x3A, let hours = number(index + 1, 2), let minutes = number(index + 4, 2),
                hours < 24, minutes < 60
            else { return nil }
            offset = (hours * 3600 + minutes * 60) * (bytes[index] == 0x2D ? -1 : 1)
        default:
            return nil
        }
        // Days from the civil date (Howard Hinnant's algorithm), valid for the proleptic Gregorian calendar.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }
}
