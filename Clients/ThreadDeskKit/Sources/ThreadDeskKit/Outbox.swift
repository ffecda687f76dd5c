import Foundation

/// A file to send with a message.
public struct OutgoingFile: Sendable, Codable, Hashable {
    public var filename: String
    /// e.g. `image/png`; the server checks images against their bytes.
    public var contentType: String
    public var data: Data

    public init(filename: String, contentType: String, data: Data) {
        self.filename = filename
        self.contentType = contentType
        self.data = data
    }

    /// A file from disk, its type guessed from the extension.
    public init(contentsOf url: URL, contentType: String? = nil) throws {
        self.init(
            filename: url.lastPathComponent, contentType: contentType ?? Self.contentType(forExtension: url.pathExtension),
            data: try Data(contentsOf: url))
    }

    static func contentType(forExtension ext: String) -> String {
        switch ext.lowercased() {
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "gif": "image/gif"
        case "webp": "image/webp"
        case "heic": "image/heic"
        case "mp4": "video/mp4"
        case "mov": "video/quicktime"
        case "pdf": "application/pdf"
        case "json": "application/json"
        case "txt", "log": "text/plain"
        case "zip": "application/zip"
        default: "application/octet-stream"
        }
    }
}

/// A message the user sent that the server has not confirmed yet. Its `id` is the
/// `Idempotency-Key` of every attempt, so however often it is retried (after a timeout, a 503 or
/// an app restart) the server posts it once.
public struct OutboxEntry: Sendable, Codable, Hashable, Identifiable {
    public var id: String
    public var text: String
    public var files: [OutgoingFile]
    public var createdAt: Date
    /// The suggestion shown right before (sent with a text-only message).
    public var suggestionID: String?

    public init(
        id: String = UUID().uuidString, text: String, files: [OutgoingFile] = [], createdAt: Date = Date(), suggestionID: String? = nil
    ) {
        self.id = id
        self.text = text
        self.files = files
        self.createdAt = createdAt
        self.suggestionID = suggestionID
    }
}

/// Where unconfirmed sends wait. An entry is written before the first attempt and removed once
/// the server confirmed the message or refused it for good.
public protocol OutboxStore: Sendable {
    /// Pending entries, oldest first.
    func entries() async throws -> [OutboxEntry]
    func put(_ entry: OutboxEntry) async throws
    func remove(_ id: String) async throws
}

/// An outbox that lives as long as the process: for tests, or apps that accept losing an
/// unconfirmed message when they are killed.
public actor InMemoryOutbox: OutboxStore {
    private var pending: [String: OutboxEntry] = [:]

    public init() {}

    public func entries() -> [OutboxEntry] { pending.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) } }
    public func put(_ entry: OutboxEntry) { pending[entry.id] = entry }
    public func remove(_ id: String) { pending[id] = nil }
}

/// An outbox in a directory: one file per entry, written atomically, readable by its owner only,
/// so a send survives the app being killed between the tap and the server's answer.
public actor FileOutbox: OutboxStore {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    private func url(_ id: String) -> URL {
        // Entry ids are the SDK's own UUIDs; anything else is made safe for a file name.
        let safe = String(id.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || $0 == "-" ? Character($0) : "_" })
        return directory.appendingPathComponent("\(safe).json")
    }

    public func entries() throws -> [OutboxEntry] {
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" && !$0.lastPathComponent.hasPrefix(".") }
        // An unreadable entry (a half-written file from a crash is impossible: writes are atomic;
        // a file from a future version, say) is skipped, not fatal to the others.
        return files.compactMap { try? JSONDecoder().decode(OutboxEntry.self, from: Data(contentsOf: $0)) }
            .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    public func put(_ entry: OutboxEntry) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try PrivateFile.write(try JSONEncoder().encode(entry), to: url(entry.id))
    }

    public func remove(_ id: String) throws {
        let url = url(id)
        if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
    }
}
