import Foundation

#if canImport(Security)
import Security
#endif

/// Where the session (user id and bearer token) is kept between launches. The token is a
/// credential: keep it where the platform keeps secrets.
public protocol SessionStore: Sendable {
    func load() async throws -> Session?
    /// Replaces the kept session; nil forgets it.
    func save(_ session: Session?) async throws
}

/// Keeps the session in memory only: for tests and previews.
public actor InMemorySessionStore: SessionStore {
    private var session: Session?

    public init(_ session: Session? = nil) { self.session = session }

    public func load() -> Session? { session }
    public func save(_ session: Session?) { self.session = session }
}

/// Keeps the session in a JSON file readable by its owner only (Linux, command-line tools).
public struct FileSessionStore: SessionStore {
    public let url: URL

    public init(url: URL) { self.url = url }

    public func load() async throws -> Session? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try JSONDecoder().decode(Session.self, from: Data(contentsOf: url))
    }

    public func save(_ session: Session?) async throws {
        guard let session else {
            if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
            return
        }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try PrivateFile.write(try JSONEncoder().encode(session), to: url)
    }
}

/// Files only their owner may read, replaced atomically.
enum PrivateFile {
    static func write(_ data: Data, to url: URL) throws {
        let folder = url.deletingLastPathComponent()
        if !FileManager.default.fileExists(atPath: folder.path) {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)")
        // Created owner-only from the first byte (not made so afterwards), written, flushed to disk.
        let descriptor = open(temporary.path, O_CREAT | O_EXCL | O_WRONLY, 0o600)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteNoPermission) }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var written = true
        do {
            try handle.write(contentsOf: data)
            try handle.synchronize()
            try handle.close()
        } catch {
            written = false
        }
        // rename(2) replaces the old file in one step: a reader sees the old or the new, never half.
        guard written, rename(temporary.path, url.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown)
        }
    }
}

#if canImport(Security)
/// Keeps the session in the Keychain (Apple platforms): a generic password item, available
/// after the first unlock so a push handled in the background can still use it.
public struct KeychainSessionStore: SessionStore {
    public let service: String
    public let account: String

    public struct Failure: Error, Hashable {
        public let status: OSStatus
    }

    public init(service: String = "ThreadDeskKit", account: String = "session") {
        self.service = service
        self.account = account
    }

    private var query: [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account]
    }

    public func load() async throws -> Session? {
        var query = query
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: AnyObject?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = result as? Data else { throw Failure(status: status) }
        return try JSONDecoder().decode(Session.self, from: data)
    }

    public func save(_ session: Session?) async throws {
        let deleted = SecItemDelete(query as CFDictionary)
        guard deleted == errSecSuccess || deleted == errSecItemNotFound else { throw Failure(status: deleted) }
        guard let session else { return }
        var item = query
        item[kSecValueData as String] = try JSONEncoder().encode(session)
        item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        let status = SecItemAdd(item as CFDictionary, nil)
        guard status == errSecSuccess else { throw Failure(status: status) }
    }
}
#endif
