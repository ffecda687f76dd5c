import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskServer
import ThreadDeskStore

/// Files both ways: a user's upload reaches the thread as Discord attachments, checked before
/// anything is sent; an agent's file reaches the user through ThreadDesk, before and after
/// Discord's signed CDN URL expires.
@Suite("Attachments both ways")
struct AttachmentTests {
    /// A PNG's signature and IHDR (2 × 3 pixels), then arbitrary bytes.
    static func png(extra: Int = 300) -> Data {
        var data = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8) + [0, 0, 0, 2, 0, 0, 0, 3, 8, 2, 0, 0, 0])
        data.append(Data((0..<extra).map { UInt8(truncatingIfNeeded: $0 &* 31) }))
        return data
    }

    struct Part {
        var name: String
        var filename: String?
        var contentType: String?
        var data: Data
    }

    static func multipart(_ parts: [Part], boundary: String = "test-boundary-42") -> (Data, String) {
        var body = Data()
        for part in parts {
            var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(part.name)\""
            if let filename = part.filename { head += "; filename=\"\(filename)\"" }
            head += "\r\n"
            if let type = part.contentType { head += "Content-Type: \(type)\r\n" }
            body.append(Data((head + "\r\n").utf8))
            body.append(part.data)
            body.append(Data("\r\n".utf8))
        }
        body.append(Data("--\(boundary)--\r\n".utf8))
        return (body, "multipart/form-data; boundary=\(boundary)")
    }

    static func send(_ server: Harness, token: String, _ parts: [Part], key: String = UUID().uuidString) async throws -> Harness.Reply {
        let (body, type) = multipart(parts)
        let reply = try await server.request(
            .post, "/v1/messages", token: token, headers: [.init("Idempotency-Key")!: key], raw: body, contentType: type)
        // Accepted: delivered by the outbox once the server's work is done (as `Harness.send`).
        if reply.status == .created { try await server.settled() }
        return reply
    }

    @Test func aUsersPNGWithTextReachesTheThreadAndARetryPostsNothingNew() async throws {
        try await withServer { server in
            let (user, thread, _) = try await server.userWithThread()
            let image = Self.png()
            let parts = [
                Part(name: "content", data: Data("Here is the screen".utf8)),
                Part(name: "files", filename: "../../etc/Screen Shot.png", contentType: "image/png", data: image),
            ]
            let key = UUID().uuidString
            let sent = try await Self.send(server, token: user.token, parts, key: key)
            #expect(sent.status == .created, "\(String(decoding: sent.body, as: UTF8.self))")
            let attachment = try #require(sent.json["attachments"]?[0])
            #expect(attachment["filename"]?.stringValue == "Screen Shot.png")
            #expect(attachment["contentType"]?.stringValue == "image/png")
            #expect(attachment["size"]?.intValue == image.count)
            #expect(attachment["url"]?.stringValue == "/v1/attachments/\(attachment["id"]?.stringValue ?? "")")
            #expect(sent.json["content"]?.stringValue == "Here is the screen")
            // Delivered: Discord's account of the file (its pixel size) is what the app lists now.
            let delivered = try #require(try await server.messages(token: user.token).last?["attachments"]?[0])
            #expect(delivered["width"]?.intValue == 2 && delivered["height"]?.intValue == 3)

            let posted = try #require(server.emulator.messages(inThread: thread).last)
            #expect(posted.content == "Here is the screen" && posted.attachmentNames == ["Screen Shot.png"])
            let id = try #require(posted.attachmentIDs.first)
            #expect(server.emulator.attachmentData(id, inChannel: thread) == image)

            let posts = server.discordPosts
            let again = try await Self.send(server, token: user.token, parts, key: key)
            #expect(again.status == .created)
            #expect(again.json["id"] != nil && again.json["id"] == sent.json["id"])
            #expect(server.discordPosts == posts)
            // The same key with other files is a different message: refused, not posted.
            var other = parts
            other[1].data = Self.png(extra: 400)
            let reused = try await Self.send(server, token: user.token, other, key: key)
            #expect(reused.status == .unprocessableContent && reused.errorCode == "idempotency_key_reused")
            #expect(server.discordPosts == posts)

            // The user gets their own file back through ThreadDesk, under the id the send answered
            // with (Discord's stays inside).
            #expect(delivered["id"] == attachment["id"])
            let download = try await server.request(.get, "/v1/attachments/\(try #require(attachment["id"]?.stringValue))", token: user.token)
            #expect(download.status == .ok && download.body == image)
            #expect(download.headers[.contentType] == "image/png")
        }
    }

    @Test func anAttachmentOnlyMessageAndTheFirstMessageOfAThreadCarryTheirFiles() async throws {
        try await withServer { server in
            let user = try await server.session()
            let sent = try await Self.send(server, token: user.token, [Part(name: "files", filename: "log.txt", contentType: "text/plain", data: Data("line 1\n".utf8))])
            #expect(sent.status == .created, "\(String(decoding: sent.body, as: UTF8.self))")
            #expect(sent.json["content"]?.stringValue == "")
            let thread = try #require(try await server.thread(of: user.userId))
            let starter = try #require(server.emulator.messages(inThread: thread).first)
            #expect(starter.attachmentNames == ["log.txt"])
            let page = try await server.messages(token: user.token)
            #expect(page.count == 1 && page[0]["attachments"]?[0]?["filename"]?.stringValue == "log.txt")
        }
    }

    @Test func everyLimitIsAClearErrorAndNothingReachesDiscord() async throws {
        try await withServer({ $0.attachments.maxFileBytes = 64 * 1024; $0.attachments.maxTotalBytes = 100 * 1024 }) { server in
            let (user, _, _) = try await server.userWithThread()
            let posts = server.discordPosts
            let cases: [(String, [Part], HTTPResponse.Status, String)] = [
                ("oversized", [Part(name: "files", filename: "big.png", contentType: "image/png", data: Self.png(extra: 70 * 1024))],
                 .contentTooLarge, "file_too_large"),
                ("over the total", (0..<3).map { Part(name: "files", filename: "p\($0).png", contentType: "image/png", data: Self.png(extra: 40 * 1024)) },
                 .contentTooLarge, "upload_too_large"),
                ("disallowed type", [Part(name: "files", filename: "page.html", contentType: "text/html", data: Data("<script>".utf8))],
                 .unsupportedMediaType, "unsupported_file_type"),
                ("svg", [Part(name: "files", filename: "x.svg", contentType: "image/svg+xml", data: Data("<svg/>".utf8))],
                 .unsupportedMediaType, "unsupported_file_type"),
                ("not a PNG", [Part(name: "files", filename: "fake.png", contentType: "image/png", data: Data("GIF89a-and-more".utf8))],
                 .unprocessableContent, "file_content_mismatch"),
                ("empty file", [Part(name: "files", filename: "e.png", contentType: "image/png", data: Data())], .badRequest, "empty_file"),
                ("too many", (0..<11).map { Part(name: "files", filename: "\($0).txt", contentType: "text/plain", data: Data("x".utf8)) },
                 .badRequest, "too_many_files"),
                ("unknown field", [Part(name: "payload_json", data: Data("{}".utf8))], .badRequest, "unexpected_field"),
                ("nothing", [Part(name: "content", data: Data("   ".utf8))], .badRequest, "empty_message"),
            ]
            for (what, parts, status, code) in cases {
                let reply = try await Self.send(server, token: user.token, parts)
                #expect(reply.status == status && reply.errorCode == code, "\(what): \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
            }
            let broken = try await server.request(
                .post, "/v1/messages", token: user.token, headers: [.init("Idempotency-Key")!: "k-broken"],
                raw: Data("--b\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\nno end".utf8), contentType: "multipart/form-data; boundary=b")
            #expect(broken.status == .badRequest && broken.errorCode == "invalid_multipart")
            let noBoundary = try await server.request(
                .post, "/v1/messages", token: user.token, headers: [.init("Idempotency-Key")!: "k-nb"], raw: Data("x".utf8),
                contentType: "multipart/form-data")
            #expect(noBoundary.status == .badRequest && noBoundary.errorCode == "invalid_multipart")
            #expect(server.discordPosts == posts)
        }
    }

    @Test func theUploadQuotaCountsMebibytes() async throws {
        try await withServer({ $0.quotas.uploadMiBPerUser = QuotaLimit(1, per: .seconds(3600)) }) { server in
            let (user, _, _) = try await server.userWithThread()
            let file = { Part(name: "files", filename: "shot.png", contentType: "image/png", data: Self.png(extra: 600 * 1024)) }
            let first = try await Self.send(server, token: user.token, [file()])
            #expect(first.status == .created)
            let posts = server.discordPosts
            let second = try await Self.send(server, token: user.token, [file()])
            #expect(second.status == .tooManyRequests && second.errorCode == "rate_limited")
            #expect(second.headers[.retryAfter] != nil)
            #expect(server.discordPosts == posts)
            // Text alone costs no upload tokens.
            #expect(try await server.send("still here", token: user.token).status == .created)
        }
    }

    @Test func anAgentsImageReachesTheUserBeforeAndAfterTheCDNURLExpires() async throws {
        try await withServer(gateway: true) { server in
            let (user, thread, _) = try await server.userWithThread()
            let image = Self.png(extra: 5000)
            let reply = try server.emulator.replyAsAgent(
                inThread: thread, content: "", attachments: [.init(filename: "fix.png", contentType: "image/png", data: image)])
            var attachment: JSON?
            try await server.settled()
            attachment = try await server.messages(token: user.token).first { $0["id"]?.stringValue == reply.id }?["attachments"]?[0]
            #expect(attachment != nil, "the agent's image in the user's conversation")
            let id = try #require(attachment?["id"]?.stringValue)
            #expect(attachment?["url"]?.stringValue == "/v1/attachments/\(id)")
            #expect(attachment?["width"]?.intValue == 2)

            let first = try await server.request(.get, "/v1/attachments/\(id)", token: user.token)
            #expect(first.status == .ok && first.body == image)
            #expect(first.headers[.contentDisposition]?.hasPrefix("inline") == true)
            #expect(first.headers[.init("X-Content-Type-Options")!] == "nosniff")
            let ranged = try await server.request(.get, "/v1/attachments/\(id)", token: user.token, headers: [.range: "bytes=8-15"])
            #expect(ranged.status == .partialContent && ranged.body == image[8...15])
            #expect(ranged.headers[.contentRange] == "bytes 8-15/\(image.count)")

            // A day and more later (by Discord's clock; ours did not move) the mirror's URL no longer
            // works at the CDN: refused once, signed anew, served.
            server.emulator.advanceClock(by: 25 * 3600)
            let refusalsBefore = server.emulator.counters.cdnRefusals
            let later = try await server.request(.get, "/v1/attachments/\(id)", token: user.token)
            #expect(later.status == .ok && later.body == image)
            #expect(server.emulator.counters.requests("POST", "/attachments/refresh-urls") == 1)
            #expect(server.emulator.counters.cdnRefusals == refusalsBefore + 1)
            // The fresh URL is kept: the next download needs no new signature.
            let again = try await server.request(.get, "/v1/attachments/\(id)", token: user.token)
            #expect(again.status == .ok && again.body == image)
            #expect(server.emulator.counters.requests("POST", "/attachments/refresh-urls") == 1)
            #expect(try await server.metric("threaddesk_attachment_urls_refreshed_total") == 1)
        }
    }

    @Test func anotherUsersANotesAndAnUnknownAttachmentAre404() async throws {
        try await withServer(gateway: true) { server in
            let (alice, aliceThread, _) = try await server.userWithThread()
            let (bob, _, _) = try await server.userWithThread(device: String(repeating: "cd", count: 32))
            let shared = try server.emulator.replyAsAgent(
                inThread: aliceThread, content: "for alice", attachments: [.init(filename: "a.png", contentType: "image/png", data: Self.png())])
            let note = try server.emulator.replyAsAgent(
                inThread: aliceThread, content: ":ninja: internal", attachments: [.init(filename: "secret.txt", contentType: "text/plain", data: Data("s".utf8))])
            var visibleID: String?
            try await server.settled()
            visibleID = try await server.messages(token: alice.token).first { $0["id"]?.stringValue == shared.id }?["attachments"]?[0]?["id"]?.stringValue
            #expect(visibleID != nil, "alice's attachment in her conversation")
            let aliceAttachment = try #require(visibleID)
            let noteAttachment = try #require(server.emulator.messages(inThread: aliceThread).first { $0.id == note.id }?.attachmentIDs.first)
            try await server.settled()
            try #require(try await server.store.mirroredMessages([Snowflake(note.id)!]).first != nil, "the note in the mirror")
            let cases = [
                (bob.token, aliceAttachment, "another user's attachment"),
                (alice.token, noteAttachment, "a note's attachment"),
                (alice.token, "123456789012345678", "an unknown id"),
                (alice.token, "not-an-id", "a malformed id"),
            ]
            for (token, id, what) in cases {
                let reply = try await server.request(.get, "/v1/attachments/\(id)", token: token)
                #expect(reply.status == .notFound && reply.errorCode == "attachment_not_found", "\(what): \(reply.status)")
            }
            let anonymous = try await server.request(.get, "/v1/attachments/\(aliceAttachment)")
            #expect(anonymous.status == .unauthorized)

            // Deleted in Discord: gone for the user too.
            try server.emulator.deleteMessage(shared.id, inChannel: aliceThread)
            try await server.settled()
            try #require(try await server.store.mirroredMessages([Snowflake(shared.id)!]).first?.deleted == true, "the deletion in the mirror")
            let deleted = try await server.request(.get, "/v1/attachments/\(aliceAttachment)", token: alice.token)
            #expect(deleted.status == .notFound)
        }
    }

    /// A name's extension agrees with the type the file is checked and served as: a text file
    /// named `x.html` would open as a page wherever it is saved.
    @Test func anUploadsExtensionAgreesWithItsCheckedType() async throws {
        try await withServer { server in
            let (user, thread, _) = try await server.userWithThread()
            let text = Data("<script>alert(1)</script>".utf8)
            // A JSON file must be JSON (its bytes are checked), here a string holding the script.
            let json = Data(#""<script>alert(1)</script>""#.utf8)
            let cases = [
                ("x.html", "text/plain", "x.html.txt"), ("y.SVG", "text/plain", "y.SVG.txt"), ("z.js", "application/json", "z.js.json"),
                ("page.xhtml", "text/plain", "page.xhtml.txt"), ("feed.xml", "text/plain", "feed.xml.txt"), ("m.mjs", "text/plain", "m.mjs.txt"),
                ("old.htm", "text/plain", "old.htm.txt"), ("fake.png", "text/plain", "fake.png.txt"),
                ("notes.txt", "text/plain", "notes.txt"), ("crash.log", "text/plain", "crash.log"), ("data.json", "application/json", "data.json"),
                ("README", "text/plain", "README"),
            ]
            for (name, type, expected) in cases {
                let data = type == "application/json" ? json : text
                let sent = try await Self.send(server, token: user.token, [Part(name: "files", filename: name, contentType: type, data: data)])
                #expect(sent.status == .created, "\(name): \(String(decoding: sent.body, as: UTF8.self))")
                #expect(sent.json["attachments"]?[0]?["filename"]?.stringValue == expected, "\(name)")
                #expect(server.emulator.messages(inThread: thread).last?.attachmentNames == [expected], "\(name)")
            }
        }
    }

    /// The proxy fetches the CDN's bytes and nothing else: no redirect is followed, no encoding
    /// it would have to undo is asked for, and the file's name reaches every client intact.
    @Test func theProxyFetchesOnlyTheCDNsBytesAndNamesThemSafely() async throws {
        try await withServer(gateway: true) { server in
            let (user, thread, _) = try await server.userWithThread()
            let text = Data(String(repeating: "plain text, squeezable\n", count: 200).utf8)
            let name = "naïve plan «été» (v2).txt"
            let reply = try server.emulator.replyAsAgent(
                inThread: thread, content: "",
                attachments: [
                    .init(filename: name, contentType: "text/plain; charset=utf-8", data: text),
                    .init(filename: "page.html", contentType: "text/plain", data: Data("<script>alert(1)</script>".utf8)),
                ])
            var ids: [String] = []
            try await server.settled()
            let attachments = try await server.messages(token: user.token).first { $0["id"]?.stringValue == reply.id }?["attachments"]?.arrayValue
            ids = attachments?.compactMap { $0["id"]?.stringValue } ?? []
            #expect(ids.count == 2, "the agent's files in the conversation")
            let plain = try await server.request(.get, "/v1/attachments/\(ids[0])", token: user.token)
            #expect(plain.status == .ok && plain.body == text)
            #expect(plain.headers[.contentEncoding] == nil)
            #expect(plain.headers[.contentLength] == nil || plain.headers[.contentLength] == String(text.count))
            // Asked for the bytes as they are.
            let encodings = server.emulator.counters.cdnAcceptEncodings
            #expect(!encodings.isEmpty && encodings.allSatisfy { $0.isEmpty || $0 == "identity" }, "\(encodings)")

            let disposition = try #require(plain.headers[.contentDisposition])
            let parameters = Self.dispositionParameters(disposition)
            let fallback = try #require(parameters["filename"], "\(disposition)")
            #expect(fallback.unicodeScalars.allSatisfy { $0.isASCII && $0.value >= 0x20 && $0.value != 0x7F && $0 != "\"" && $0 != "\\" })
            let extended = try #require(parameters["filename*"], "\(disposition)")
            #expect(extended.hasPrefix("UTF-8''"))
            let encoded = extended.dropFirst("UTF-8''".count)
            // RFC 5987 attr-char, or a percent-encoded octet.
            let attrChars = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$&+-.^_`|~%".unicodeScalars)
            #expect(encoded.unicodeScalars.allSatisfy(attrChars.contains), "\(encoded)")
            #expect(String(encoded).removingPercentEncoding == name)

            // Served as text, so named as text.
            let html = try await server.request(.get, "/v1/attachments/\(ids[1])", token: user.token)
            #expect(html.status == .ok && html.headers[.contentType] == "text/plain")
            #expect(Self.dispositionParameters(html.headers[.contentDisposition] ?? "")["filename"] == "page.html.txt")

            // A CDN answer that redirects elsewhere is not followed.
            server.emulator.redirectCDNDownloads()
            let redirected = try await server.request(.get, "/v1/attachments/\(ids[0])", token: user.token)
            #expect(redirected.status == .serviceUnavailable && redirected.errorCode == "attachment_unavailable")
            #expect(server.emulator.counters.offCDNRequests == 0)
            let after = try await server.request(.get, "/v1/attachments/\(ids[0])", token: user.token)
            #expect(after.status == .ok && after.body == text)
        }
    }

    /// `attachment; filename="a"; filename*=UTF-8''b` → ["filename": "a", "filename*": "UTF-8''b"].
    static func dispositionParameters(_ header: String) -> [String: String] {
        var parameters: [String: String] = [:]
        for piece in header.split(separator: ";").dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            var value = pair[1]
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            parameters[pair[0].lowercased()] = value
        }
        return parameters
    }
}

/// A file of the user's first message, asked for while the outbox's delivery of it is still under
/// way (its thread made, the files moved into it, the record not yet saved: here the away message
/// it posts last is held at Discord) is not called missing: the download waits for the user's
/// turn, past its own deadline here (503, to retry), and is served once the delivery is done.
@Suite("Attachments during their delivery", .timeLimit(.minutes(2)))
struct AttachmentDuringDeliveryTests {
    @Test func aFileAskedForWhileItsFirstMessageIsBeingKeptIsNotCalledMissing() async throws {
        try await withServer(gateway: true) { configuration in
            configuration.desk.commands = true
            configuration.desk.awayMessage = AwayTests.awayText
            configuration.requestTimeout = .seconds(2)
        } _: { server in
            let (_, thread, _) = try await server.userWithThread()
            try await DeskTests.run(server, "away", in: thread, [.subcommand("on")])
            let user = try await server.session()
            let route = "POST /webhooks/{webhook_id}/{webhook_token}"
            let before = server.emulator.counters.requestsByRoute[route, default: 0]
            server.emulator.holdRequests("POST", "/webhooks/{webhook_id}/{webhook_token}")
            let image = AttachmentTests.png()
            let (body, type) = AttachmentTests.multipart([
                .init(name: "content", data: Data("first, with a screenshot".utf8)),
                .init(name: "files", filename: "shot.png", contentType: "image/png", data: image),
            ])
            let sent = try await server.request(
                .post, "/v1/messages", token: user.token, headers: [.init("Idempotency-Key")!: UUID().uuidString], raw: body, contentType: type)
            try #require(sent.status == .created)
            let url = try #require(sent.json["attachments"]?[0]?["url"]?.stringValue)
            // The away message's post waits at Discord: the delivery holds the user's turn there.
            try await server.emulator.waitUntil("the away message held") { $0.counters.requestsByRoute[route, default: 0] > before }
            let during = try await server.request(.get, url, token: user.token)
            #expect(during.status != .notFound, "the file is the user's: \(during.status)")
            server.emulator.releaseHeldRequests()
            try await server.settled()
            let after = try await server.request(.get, url, token: user.token)
            #expect(after.status == .ok && after.body == image)
        }
    }
}
