import AsyncHTTPClient
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import NIOCore
import NIOFoundationCompat
import Testing
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

@Suite("Diagnostics, device info and push tokens")
struct DeviceTests {
    @Test func diagnosticsArriveAsAFileAndASummaryNote() async throws {
        try await withServer { server in
            let user = try await server.session()
            let document = #"""
                {"app":{"version":"3.1.0","build":"310"},"device":{"model":"iPhone15,2","systemVersion":"17.2","locale":"de_DE"},
                 "platform":"iOS","events":[\#((0..<500).map { "{\"n\":\($0)}" }.joined(separator: ","))],"flags":["a","b"]}
                """#
            let reply = try await server.request(.post, "/v1/diagnostics", token: user.token, json: document)
            #expect(reply.status == .created)
            let filename = try #require(reply.json["filename"]?.stringValue)
            #expect(filename.hasPrefix("diagnostics-") && filename.hasSuffix("Z.json"))
            #expect(reply.json["size"]?.intValue == document.utf8.count)
            // Accepted into the outbox: in Discord once delivered.
            try await server.settled()

            let thread = try #require(try await server.thread(of: user.userId))
            let posted = server.emulator.messages(inThread: thread)
            #expect(posted.count == 2)
            #expect(posted[0].attachmentNames == [filename])
            #expect(posted[0].content.hasPrefix(":ninja:"))
            let note = posted[1].content
            #expect(note.hasPrefix(":ninja:"))
            #expect(note.utf16.count <= 2000)
            for expected in ["3.1.0", "310", "iPhone15,2", "17.2", "de_DE", "iOS", "events: 500 items", "flags: [a, b]"] {
                #expect(note.contains(expected), "summary lacks \(expected)")
            }
            // The file is the document, byte for byte.
            let upload = try #require(server.emulator.recordedRequests.first { !$0.fileNames.isEmpty })
            #expect(upload.fileNames == [filename])
            let page = try await DiscordClient(
                configuration: .init(baseURL: server.discord.restURL, token: server.discord.botToken), logger: testLogger()
            ).messages(in: thread, limit: 10)
            let url = try #require(page.last?.attachments.first?.url)
            let download = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(5))
            #expect(String(buffer: try await download.body.collect(upTo: 1 << 20)) == document)
            #expect(try await server.messages(token: user.token).isEmpty)
        }
    }

    @Test func aHugeDiagnosticsDocumentStillGetsAShortNote() async throws {
        try await withServer { server in
            let user = try await server.session()
            let fields = (0..<400).map { "\"field_\($0)\":{\"nested\":{\"value\":\"\(String(repeating: "v", count: 100))\"}}" }
            let reply = try await server.request(.post, "/v1/diagnostics", token: user.token, json: "{\(fields.joined(separator: ","))}")
            #expect(reply.status == .created)
            try await server.settled()
            let thread = try #require(try await server.thread(of: user.userId))
            let note = try #require(server.emulator.messages(inThread: thread).last?.content)
            #expect(note.utf16.count <= 2000)
            #expect(note.contains("more lines in the file"))
        }
    }

    @Test func diagnosticsTooDeepOrWithTooManyValuesAreRefusedBeforeParsing() async throws {
        try await withServer { server in
            let user = try await server.session()
            let deep = "{\"a\":" + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}"
            // 300,000 values in 600 KB: a tree of that is far larger in memory than on the wire.
            let wide = "{\"a\":[" + Array(repeating: "0", count: 300_000).joined(separator: ",") + "]}"
            for body in [deep, wide] {
                let reply = try await server.request(.post, "/v1/diagnostics", token: user.token, raw: Data(body.utf8))
                #expect(reply.status == .badRequest)
                #expect(reply.errorCode == "too_complex")
            }
            // Brackets inside strings are text, not nesting.
            let quoted = #"{"log":"\#(String(repeating: "[", count: 100))"}"#
            let fine = try await server.request(.post, "/v1/diagnostics", token: user.token, raw: Data(quoted.utf8))
            #expect(fine.status == .created)
            try await server.settled()
            #expect(server.emulator.recordedRequests.filter { $0.method == "POST" }.count >= 1)
        }
    }

    @Test func theShapeScanBoundsWhatParsingBuilds() throws {
        for text in [#"{"a":[1,{"b":[[]]}],"c":"]]}}\"["}"#, "[[1],[2],[3]]", #"{"k":{"k":{"k":1}}}"#, "[]", "7"] {
            let shape = JSON.shape(of: Data(text.utf8))
            let measured = try JSON.parse(Data(text.utf8)).measured
            #expect(measured.depth == shape.depth, "\(text)")
            #expect(measured.values <= shape.values, "\(text)")
        }
    }

    @Test func diagnosticsMustBeAJSONObjectOfAtMost8MiB() async throws {
        try await withServer { server in
            let user = try await server.session()
            for body in ["[1,2]", "\"text\"", "42", "{not json", ""] {
                let reply = try await server.request(.post, "/v1/diagnostics", token: user.token, raw: Data(body.utf8))
                #expect(reply.status == .badRequest, "\(body)")
            }
            let huge = Data("{\"blob\":\"".utf8) + Data(repeating: UInt8(ascii: "a"), count: 8 * 1024 * 1024) + Data("\"}".utf8)
            let tooLarge = try await server.request(.post, "/v1/diagnostics", token: user.token, raw: huge)
            #expect(tooLarge.status == .contentTooLarge)
            #expect(tooLarge.errorCode == "body_too_large")
            let text = try await server.request(.post, "/v1/diagnostics", token: user.token, raw: Data("{}".utf8), contentType: "text/plain")
            #expect(text.status == .unsupportedMediaType)
            #expect(server.emulator.recordedRequests.isEmpty)
        }
    }

    @Test func deviceInfoIsNotedOncePerChange() async throws {
        try await withServer { server in
            let user = try await server.session()
            let info = #"{"appVersion":"1.0","buildVersion":"1","osPlatform":"iOS","osVersion":"17.1","locale":"en_US","deviceModel":"iPhone14,7","theme":"dark"}"#
            // Before the thread exists the info waits for it.
            #expect(try await server.request(.put, "/v1/installation", token: user.token, json: info).json["changed"] == true)
            #expect(server.discordPosts == 0)
            _ = try await server.send("hi", token: user.token)
            let thread = try #require(try await server.thread(of: user.userId))
            let notes = { server.emulator.messages(inThread: thread).filter { $0.content.contains("Device info") } }
            #expect(notes().count == 1)
            #expect(notes().first?.content.contains("iPhone14,7") == true)
            #expect(notes().first?.content.contains("theme: dark") == true)

            // Ten identical reports at once: still one note.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<10 {
                    group.addTask { _ = try await server.request(.put, "/v1/installation", token: user.token, json: info) }
                }
                try await group.waitForAll()
            }
            #expect(notes().count == 1)
            let updated = info.replacingOccurrences(of: "17.1", with: "17.2")
            let results = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<10 {
                    group.addTask { try await server.request(.put, "/v1/installation", token: user.token, json: updated).json["changed"] == true }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(results.filter { $0 }.count == 1)
            #expect(notes().count == 2)
            #expect(notes().last?.content.contains("17.2") == true)
        }
    }

    @Test func installationInputIsValidated() async throws {
        try await withServer { server in
            let user = try await server.session()
            let bad = [
                "[]", #"{"appVersion":{"nested":true}}"#, #"{"appVersion":"\#(String(repeating: "x", count: 201))"}"#,
                #"{"appVersion":"two\nlines"}"#, "{" + (0..<40).map { "\"k\($0)\":1" }.joined(separator: ",") + "}",
            ]
            for body in bad {
                let reply = try await server.request(.put, "/v1/installation", token: user.token, json: body)
                #expect(reply.status == .badRequest, "\(body)")
                #expect(reply.errorCode == "invalid_installation")
            }
            #expect(server.emulator.recordedRequests.isEmpty)
        }
    }

    @Test func pushTokensAreStoredAndNeverPosted() async throws {
        try await withServer { server in
            let user = try await server.session()
            let token = String(repeating: "ab12", count: 16)
            let set = try await server.request(
                .put, "/v1/push-token", token: user.token, json: #"{"token":"\#(token.uppercased())","environment":"development"}"#)
            #expect(set.status == .noContent)
            let record = try #require(try await server.store.user(UserID(user.userId)!))
            #expect(record.pushToken == token)
            #expect(record.pushEnvironment == .development)

            for body in [#"{"token":"xyz","environment":"production"}"#, #"{"token":"\#(token)","environment":"staging"}"#, #"{"token":"\#(token)"}"#] {
                #expect(try await server.request(.put, "/v1/push-token", token: user.token, json: body).status == .badRequest)
            }
            _ = try await server.send("message with a token set", token: user.token)
            let everything = server.emulator.recordedRequests.map { String(describing: $0) }.joined()
            #expect(!everything.lowercased().contains(token))

            #expect(try await server.request(.delete, "/v1/push-token", token: user.token).status == .noContent)
            #expect(try await server.store.user(UserID(user.userId)!)?.pushToken == nil)
        }
    }

    /// An idempotency key names one request of one kind: a diagnostics upload and a message that
    /// happen to carry the same key are two requests, each answered as itself.
    @Test func aDiagnosticsKeyAndAMessageKeyNeverCollide() async throws {
        try await withServer { server in
            let (user, _, _) = try await server.userWithThread()
            let key: HTTPFields = [.init("Idempotency-Key")!: "same-key"]
            #expect(try await server.request(.post, "/v1/diagnostics", token: user.token, headers: key, json: #"{"a":1}"#).status == .created)
            #expect(try await server.send("a message", token: user.token, key: "same-key").status == .created)
            // Each retried as itself.
            #expect(try await server.request(.post, "/v1/diagnostics", token: user.token, headers: key, json: #"{"a":1}"#).status == .created)
            #expect(try await server.send("a message", token: user.token, key: "same-key").status == .created)
            #expect(try await server.messages(token: user.token).map { $0["content"]?.stringValue } == ["hello", "a message"])
        }
    }
}
