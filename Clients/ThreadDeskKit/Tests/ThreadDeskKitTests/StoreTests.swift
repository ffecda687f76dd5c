import Foundation
import Testing
@testable import ThreadDeskKit

@Suite("Outbox and session stores")
struct StoreTests {
    private func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("threaddeskkit-\(UUID().uuidString)")
    }

    @Test func theFileOutboxKeepsEntriesAcrossInstancesInOrderWithTheirKeys() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = OutboxEntry(text: "first", createdAt: Date(timeIntervalSince1970: 100))
        let second = OutboxEntry(
            text: "second", files: [OutgoingFile(filename: "a.png", contentType: "image/png", data: Data([1, 2, 3]))],
            createdAt: Date(timeIntervalSince1970: 200))
        do {
            let outbox = FileOutbox(directory: directory)
            try await outbox.put(second)
            try await outbox.put(first)
        }
        // A new instance, as after the app was killed and launched again.
        let reopened = FileOutbox(directory: directory)
        #expect(try await reopened.entries() == [first, second])
        try await reopened.remove(first.id)
        #expect(try await reopened.entries() == [second])
        try await reopened.remove("never-there")
        // Only the owner may read what waits there (it holds the user's words and files).
        let file = try FileManager.default.contentsOfDirectory(atPath: directory.path).first { $0.hasSuffix(".json") }
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(try #require(file)).path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test func aDamagedEntryDoesNotHideTheOthers() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = FileOutbox(directory: directory)
        let entry = OutboxEntry(text: "kept")
        try await outbox.put(entry)
        try Data("{not json".utf8).write(to: directory.appendingPathComponent("broken.json"))
        #expect(try await outbox.entries() == [entry])
    }

    @Test func hostileEntryIDsStayInsideTheFolder() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory.deletingLastPathComponent().appendingPathComponent("escape.json")) }
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = FileOutbox(directory: directory)
        try await outbox.put(OutboxEntry(id: "../escape", text: "x"))
        #expect(!FileManager.default.fileExists(atPath: directory.deletingLastPathComponent().appendingPathComponent("escape.json").path))
        #expect(try await outbox.entries().map(\.id) == ["../escape"])
    }

    @Test func theFileSessionStoreRoundTripsAndForgets() async throws {
        let directory = folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileSessionStore(url: directory.appendingPathComponent("session.json"))
        #expect(try await store.load() == nil)
        try await store.save(Session(userId: "u1", token: "t1"))
        try await store.save(Session(userId: "u1", token: "t2"))
        #expect(try await FileSessionStore(url: store.url).load() == Session(userId: "u1", token: "t2"))
        try await store.save(nil)
        #expect(try await store.load() == nil)
    }
}
