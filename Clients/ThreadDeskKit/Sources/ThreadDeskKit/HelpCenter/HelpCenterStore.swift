import Foundation

/// What a device keeps of the help center between launches, so the user reads offline: the
/// pages last browsed and the articles last read (each with its `ETag`, to revalidate at the
/// cost of a 304), and which reads were counted today. Opaque: a store keeps it as it is.
public struct HelpCenterSnapshot: Sendable, Codable, Hashable {
    /// A page or an article as the server last gave it, with the `ETag` to revalidate it.
    struct Kept<Value: Sendable & Codable & Hashable>: Sendable, Codable, Hashable {
        var value: Value
        var etag: String?
        var keptAt: Date
    }

    /// Browse pages by ``HelpCenter/pageKey(tag:after:)``.
    var pages: [String: Kept<ArticlePage>] = [:]
    /// Articles read, by id.
    var articles: [String: Kept<Article>] = [:]
    /// Article id → the day (UTC, `yyyy-MM-dd`) its read was counted: once a day on the device too.
    var views: [String: String] = [:]

    public init() {}

    /// Every article held, read ones first (they carry the newest text), each once.
    var knownArticles: [Article] {
        var seen = Set<String>()
        var known: [Article] = []
        for kept in articles.values.sorted(by: { $0.keptAt > $1.keptAt }) where seen.insert(kept.value.id).inserted {
            known.append(kept.value)
        }
        for kept in pages.values.sorted(by: { $0.keptAt > $1.keptAt }) {
            for article in kept.value.articles where seen.insert(article.id).inserted { known.append(article) }
        }
        return known
    }

    /// The ids of every file of a held article (the files worth keeping).
    var fileIDs: Set<String> {
        Set(knownArticles.flatMap { $0.attachments.map(\.id) })
    }

    /// At most `pages` pages and `articles` articles, the newest kept.
    mutating func trim(pages pageCap: Int, articles articleCap: Int) {
        if pages.count > pageCap {
            for key in pages.sorted(by: { $0.value.keptAt > $1.value.keptAt }).dropFirst(pageCap).map(\.key) { pages[key] = nil }
        }
        if articles.count > articleCap {
            for key in articles.sorted(by: { $0.value.keptAt > $1.value.keptAt }).dropFirst(articleCap).map(\.key) { articles[key] = nil }
        }
    }
}

/// Where the help center is kept on the device: its snapshot, and the files (images) of the
/// articles read.
public protocol HelpCenterStore: Sendable {
    func load() async throws -> HelpCenterSnapshot?
    /// Replaces the kept snapshot; nil forgets it and every file.
    func save(_ snapshot: HelpCenterSnapshot?) async throws
    /// A kept file's bytes, by the attachment's id; nil when not kept.
    func file(_ id: String) async -> Data?
    func keepFile(_ data: Data, id: String) async throws
    /// Drops every kept file but those of `ids` (the files of articles no longer held).
    func removeFiles(except ids: Set<String>) async throws
}

/// Keeps the help center in memory only: for tests and previews.
public actor InMemoryHelpCenterStore: HelpCenterStore {
    private var snapshot: HelpCenterSnapshot?
    private var files: [String: Data] = [:]

    public init() {}

    public func load() -> HelpCenterSnapshot? { snapshot }

    public func save(_ snapshot: HelpCenterSnapshot?) {
        self.snapshot = snapshot
        if snapshot == nil { files = [:] }
    }

    public func file(_ id: String) -> Data? { files[id] }
    public func keepFile(_ data: Data, id: String) { files[id] = data }
    public func removeFiles(except ids: Set<String>) { files = files.filter { ids.contains($0.key) } }
}

/// Keeps the help center in a folder: `help-center.json` and the articles' files beside it,
/// each written atomically and readable by its owner only.
public actor FileHelpCenterStore: HelpCenterStore {
    public nonisolated let directory: URL

    public init(directory: URL) { self.directory = directory }

    /// The app's help center folder in the Kit's folder (Application Support on Apple platforms).
    public static func standard() -> FileHelpCenterStore {
        FileHelpCenterStore(directory: ThreadDeskConfiguration.defaultFolder().appendingPathComponent("help-center"))
    }

    private var snapshotURL: URL { directory.appendingPathComponent("help-center.json") }
    private var filesURL: URL { directory.appendingPathComponent("files") }

    private func fileURL(_ id: String) -> URL {
        // Attachment ids are Discord's digits; anything else is made safe for a file name.
        let safe = String(id.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) && $0.isASCII ? Character($0) : "_" })
        return filesURL.appendingPathComponent(safe)
    }

    public func load() throws -> HelpCenterSnapshot? {
        guard FileManager.default.fileExists(atPath: snapshotURL.path) else { return nil }
        // A file of a newer version, or damaged: started over from the server, not fatal.
        return try? JSONDecoder().decode(HelpCenterSnapshot.self, from: Data(contentsOf: snapshotURL))
    }

    public func save(_ snapshot: HelpCenterSnapshot?) throws {
        guard let snapshot else {
            if FileManager.default.fileExists(atPath: directory.path) { try FileManager.default.removeItem(at: directory) }
            return
        }
        try PrivateFile.write(try JSONEncoder().encode(snapshot), to: snapshotURL)
    }

    public func file(_ id: String) -> Data? {
        try? Data(contentsOf: fileURL(id))
    }

    public func keepFile(_ data: Data, id: String) throws {
        try PrivateFile.write(data, to: fileURL(id))
    }

    public func removeFiles(except ids: Set<String>) throws {
        let keep = Set(ids.map { fileURL($0).lastPathComponent })
        let names = (try? FileManager.default.contentsOfDirectory(atPath: filesURL.path)) ?? []
        for name in names where !keep.contains(name) {
            try? FileManager.default.removeItem(at: filesURL.appendingPathComponent(name))
        }
    }
}
