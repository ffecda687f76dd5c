import DiscordEmulator
import Foundation
import HTTPTypes
import TestSupport
import Testing
import ThreadDeskCore
import ThreadDeskServer

/// Every file a client sends is what its declared type says, before anything reaches Discord.
@Suite("Files are what they say")
struct FileContentServerTests {
    static func posts(_ server: Harness) -> Int {
        server.emulator.counters.requests("POST", "/channels/{channel_id}/messages")
            + server.emulator.counters.requests("POST", "/channels/{channel_id}/threads")
    }

    /// For each accepted type: its own bytes go through; another type's bytes are refused with
    /// `file_content_mismatch`, naming the file and both types, and Discord hears nothing.
    @Test func eachTypeIsCheckedAgainstItsBytes() async throws {
        try await withServer { server in
            let (user, _, _) = try await server.userWithThread()
            for (type, filename, bytes) in FileSamples.byType {
                let sent = try await AttachmentTests.send(
                    server, token: user.token, [.init(name: "files", filename: filename, contentType: type, data: Data(bytes))])
                #expect(sent.status == .created, "\(type): \(String(decoding: sent.body, as: UTF8.self))")

                // A PDF's bytes under this type (a ZIP's for a PDF).
                let other = type == "application/pdf" ? "application/zip" : "application/pdf"
                if type == "text/plain" { continue }  // a PDF header is text; the NUL case is below
                let before = Self.posts(server)
                let refused = try await AttachmentTests.send(
                    server, token: user.token, [.init(name: "files", filename: filename, contentType: type, data: Data(FileSamples.bytes(of: other)))])
                #expect(refused.status == .unprocessableContent, "\(type)")
                #expect(refused.errorCode == "file_content_mismatch")
                let message = refused.json["error"]?["message"]?.stringValue ?? ""
                #expect(message.contains(filename) && message.contains(type) && message.contains(other), "\(message)")
                #expect(Self.posts(server) == before)
            }
            let before = Self.posts(server)
            let binary = try await AttachmentTests.send(
                server, token: user.token, [.init(name: "files", filename: "log.txt", contentType: "text/plain", data: Data([0x68, 0, 0x69]))])
            #expect(binary.status == .unprocessableContent && binary.errorCode == "file_content_mismatch")
            #expect(Self.posts(server) == before)
        }
    }

    /// A file sent without a type (or as octet-stream) takes its type from its extension, then
    /// gets the same check.
    @Test func aTypeTakenFromTheExtensionIsCheckedToo() async throws {
        try await withServer { server in
            let (user, _, _) = try await server.userWithThread()
            let refused = try await AttachmentTests.send(
                server, token: user.token,
                [.init(name: "files", filename: "report.json", contentType: "application/octet-stream", data: Data(FileSamples.bytes(of: "application/pdf")))])
            #expect(refused.status == .unprocessableContent && refused.errorCode == "file_content_mismatch")
        }
    }

    /// One mismatching file stops the whole message: nothing of it is posted, stored or half-sent.
    @Test func aMessageWhoseSecondFileMismatchesPostsNothing() async throws {
        try await withServer { server in
            let (user, thread, _) = try await server.userWithThread()
            let before = Self.posts(server)
            let messages = server.emulator.messages(inThread: thread).count
            let sent = try await AttachmentTests.send(server, token: user.token, [
                .init(name: "content", data: Data("two files".utf8)),
                .init(name: "files", filename: "a.png", contentType: "image/png", data: Data(FileSamples.bytes(of: "image/png"))),
                .init(name: "files", filename: "b.json", contentType: "application/json", data: Data("{\"unclosed\": ".utf8)),
            ])
            #expect(sent.status == .unprocessableContent && sent.errorCode == "file_content_mismatch")
            #expect(Self.posts(server) == before)
            #expect(server.emulator.messages(inThread: thread).count == messages)
            #expect(try await server.messages(token: user.token).count == 1)
        }
    }

    /// A JSON file nested past the limit is refused. The check keeps one flag per open bracket up
    /// to the limit and stops there, so the rest of a megabyte of brackets is never looked at.
    @Test func deeplyNestedJSONIsRefused() async throws {
        try await withServer { server in
            let (user, _, _) = try await server.userWithThread()
            let nested = Data(String(repeating: "[", count: 2_000_000).utf8) + Data(String(repeating: "]", count: 2_000_000).utf8)
            let before = Self.posts(server)
            let sent = try await AttachmentTests.send(
                server, token: user.token, [.init(name: "files", filename: "deep.json", contentType: "application/json", data: nested)])
            #expect(sent.status == .unprocessableContent && sent.errorCode == "file_content_mismatch")
            #expect(Self.posts(server) == before)
            #expect(try await server.request(.get, "/health").status == .ok)
        }
    }

    /// What an agent posts in Discord is served with its guards, and a type a browser would run
    /// (HTML, SVG, XHTML, JavaScript) never under its own type.
    @Test func runnableTypesFromDiscordAreServedAsBytesToDownload() async throws {
        try await withServer { server in
            let (user, thread, _) = try await server.userWithThread()
            let files: [(String, String)] = [
                ("page.html", "text/html; charset=utf-8"), ("logo.svg", "image/svg+xml"), ("app.xhtml", "application/xhtml+xml"),
                ("run.js", "text/javascript"), ("shot.png", "image/png"),
            ]
            let reply = try server.emulator.replyAsAgent(
                inThread: thread, content: "",
                attachments: files.map { .init(filename: $0.0, contentType: $0.1, data: $0.0 == "shot.png" ? Data(FileSamples.bytes(of: "image/png")) : Data("<script>alert(1)</script>".utf8)) })
            var attachments: [JSON] = []
            try await server.settled()
            attachments = try await server.messages(token: user.token).first { $0["id"]?.stringValue == reply.id }?["attachments"]?.arrayValue ?? []
            #expect(attachments.count == files.count, "the agent's files in the user's conversation")
            for attachment in attachments {
                let id = try #require(attachment["id"]?.stringValue)
                let name = attachment["filename"]?.stringValue ?? ""
                let served = try await server.request(.get, "/v1/attachments/\(id)", token: user.token)
                #expect(served.status == .ok)
                #expect(served.headers[.init("X-Content-Type-Options")!] == "nosniff")
                #expect(served.headers[.contentSecurityPolicy]?.contains("sandbox") == true)
                if name == "shot.png" {
                    #expect(served.headers[.contentType] == "image/png")
                } else {
                    #expect(served.headers[.contentType] == "application/octet-stream", "\(name)")
                    #expect(served.headers[.contentDisposition]?.hasPrefix("attachment") == true, "\(name)")
                }
            }
        }
    }
}
