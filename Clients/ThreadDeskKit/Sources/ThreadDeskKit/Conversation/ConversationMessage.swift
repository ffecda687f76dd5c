import Foundation

/// A message as a chat screen shows it: the server's messages and the ones still on the device.
public struct ConversationMessage: Sendable, Codable, Hashable, Identifiable {
    public enum Author: Sendable, Codable, Hashable {
        /// The app's user (this device or another of theirs).
        case user
        /// Support, with the agent's display name when the server gave one; also the developer's
        /// assistant answering by itself (``ConversationMessage/isAutomatic``).
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
    /// An automatic answer, written from the developer's help articles while support was away
    /// (its author is ``Author/support(name:)``, named as the assistant): a person may still answer.
    public var isAutomatic: Bool

    /// A message made by hand: for previews and tests.
    public init(
        id: String, text: String, files: [File] = [], author: Author, date: Date, delivery: Delivery = .sent, isEdited: Bool = false,
        replyTo: String? = nil, isAutomatic: Bool = false
    ) {
        self.id = id
        self.text = text
        self.files = files
        self.author = author
        self.date = date
        self.delivery = delivery
        self.isEdited = isEdited
        self.replyTo = replyTo
        self.isAutomatic = isAutomatic
    }

    private enum CodingKeys: String, CodingKey {
        case id, text, files, author, date, delivery, isEdited, replyTo, isAutomatic
    }

    /// Snapshots kept before automatic answers existed have no `isAutomatic`: none of theirs was.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        text = try container.decode(String.self, forKey: .text)
        files = try container.decode([File].self, forKey: .files)
        author = try container.decode(Author.self, forKey: .author)
        date = try container.decode(Date.self, forKey: .date)
        delivery = try container.decode(Delivery.self, forKey: .delivery)
        isEdited = try container.decode(Bool.self, forKey: .isEdited)
        replyTo = try container.decodeIfPresent(String.self, forKey: .replyTo)
        isAutomatic = try container.decodeIfPresent(Bool.self, forKey: .isAutomatic) ?? false
    }

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
        // Any author but the user speaks for support, the assistant and authors added later alike.
        author = message.author == .user ? .user : .support(name: message.authorName)
        isAutomatic = message.author == .assistant
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
        isAutomatic = false
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
