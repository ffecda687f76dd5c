import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskServer

/// A text is kept whole or refused whole: a NUL once cut a message on SQLite (201, `a` kept and
/// delivered) and made PostgreSQL answer 503, which the SDK retried for ever.
@Suite("Control characters in what a client writes")
struct ControlCharacterTests {
    static let key: HTTPFields = [.init("Idempotency-Key")!: "k"]

    @Test func aControlCharacterRefusesTheWholeTextOnSQLite() async throws {
        try await withServer({ $0.legacyAPIKey = "legacy-key" }) { server in try await Self.refusesControlCharacters(server) }
    }

    @Test(.enabled(if: postgresIsAvailable)) func aControlCharacterRefusesTheWholeTextOnPostgreSQL() async throws {
        try await withFreshPostgresSchema { url in
            try await withServer(store: url, { $0.legacyAPIKey = "legacy-key" }) { server in try await Self.refusesControlCharacters(server) }
        }
    }

    static func refusesControlCharacters(_ server: Harness) async throws {
        let user = try await server.session()
        for content in [#"a\u0000b"#, #"\u0000"#, #"a\u001Bb"#, #"a\u007Fb"#, #"a\u0085b"#, #"   \u0000  "#] {
            let reply = try await server.request(.post, "/v1/messages", token: user.token, headers: key, json: #"{"content":"\#(content)"}"#)
            #expect(reply.status == .badRequest, "\(content)")
            #expect(reply.errorCode == "invalid_text", "\(content)")
        }
        // Nothing was kept: the same key now takes a message of its own.
        let kept = try await server.send("line one\nline two\tand a tab\r\nend", token: user.token, key: "k")
        #expect(kept.status == .created)
        #expect(kept.json["content"]?.stringValue == "line one\nline two\tand a tab\r\nend")
        let id = try #require(kept.json["id"]?.stringValue)

        let edit = try await server.request(.patch, "/v1/messages/\(id)", token: user.token, json: #"{"content":"fi\u0000ne"}"#)
        #expect(edit.status == .badRequest)
        #expect(edit.errorCode == "invalid_text")

        let (body, type) = AttachmentTests.multipart([
            .init(name: "content", data: Data("with a file\u{0}cut".utf8)),
            .init(name: "files", filename: "shot.png", contentType: "image/png", data: AttachmentTests.png()),
        ])
        let files = try await server.request(
            .post, "/v1/messages", token: user.token, headers: [.init("Idempotency-Key")!: "files"], raw: body, contentType: type)
        #expect(files.status == .badRequest)
        #expect(files.errorCode == "invalid_text")

        let device = try await server.request(.put, "/v1/installation", token: user.token, json: #"{"appVersion":"1.0\u0000beta"}"#)
        #expect(device.status == .badRequest)
        #expect(device.errorCode == "invalid_text")
        #expect(device.json["error"]?["message"]?.stringValue?.contains("installation.appVersion") == true)

        let session = try await server.request(
            .post, "/v1/session", headers: [.init("X-App-Key")!: "test-app-key"], json: #"{"installation":{"osVersion":"18\u0000.1"}}"#)
        #expect(session.status == .badRequest)
        #expect(session.errorCode == "invalid_text")
        let legacyDevice = try await server.request(
            .post, "/new-message", headers: [.init("x-api-key")!: "legacy-key"],
            json: #"{"content":"fine","userId":"abc-def-ghj","installationInfo":{"osVersion":"18\u0007"}}"#)
        #expect(legacyDevice.status == .badRequest)
        #expect(legacyDevice.errorCode == "invalid_text")

        let legacy = try await server.request(
            .post, "/new-message", headers: [.init("x-api-key")!: "legacy-key"], json: #"{"content":"x\u0000y","userId":"abc-def-ghi"}"#)
        #expect(legacy.status == .badRequest)
        #expect(legacy.errorCode == "invalid_text")

        // What was kept is what was accepted, in the store and in Discord; nothing refused went out.
        try await server.settled()
        let page = try await server.request(.get, "/v1/messages", token: user.token)
        let contents = page.json["messages"]?.arrayValue?.compactMap { $0["content"]?.stringValue }
        #expect(contents == ["line one\nline two\tand a tab\r\nend"])
        let posted = server.emulator.recordedRequests.filter { $0.method == "POST" }.compactMap { $0.body }
        let texts = posted.compactMap { $0["message"]?["content"]?.stringValue ?? $0["content"]?.stringValue }
        #expect(texts == ["line one\nline two\tand a tab\r\nend"])
    }

    /// A document is the client's: its values are shown in the summary, each control character as a
    /// picture of itself (`␀`), and the file is kept byte for byte.
    @Test func aDiagnosticsDocumentWithControlCharactersIsSummarisedWithoutThem() async throws {
        try await withServer { server in
            let (user, thread, _) = try await server.userWithThread()
            let reply = try await server.request(
                .post, "/v1/diagnostics", token: user.token, json: #"{"appVersion":"2.0\u0000rc","log":"\u001B[31mred"}"#)
            #expect(reply.status == .created)
            try await server.settled()
            let notes = try await server.discordClient.messages(in: thread, after: "0", limit: 10).map(\.content)
            let note = try #require(notes.first { $0.contains("Diagnostics") })
            #expect(note.contains("2.0␀rc"))
            #expect(note.contains("␛") && note.contains("31mred"), "the escape shown as a symbol, markdown escaped as ever")
            #expect(ControlCharacters.first(in: note) == nil)
        }
    }
}
