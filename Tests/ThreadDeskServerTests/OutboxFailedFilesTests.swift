import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskServer
import ThreadDeskStore

/// What Discord refused for good stays with its user (text to retry or delete), but its files are
/// no one else's burden: the deployment's room counts only what is still to be delivered, a user's
/// refused files have a cap of their own, and they are let go after `OUTBOX_FAILED_KEEP_DAYS`.
@Suite("The outbox's refused files")
struct OutboxFailedFilesTests {
    static let mib = 1024 * 1024

    /// A screenshot of about 1.9 MiB.
    static func screenshot(_ text: String) -> [AttachmentTests.Part] {
        [
            .init(name: "content", data: Data(text.utf8)),
            .init(name: "files", filename: "screen.png", contentType: "image/png", data: AttachmentTests.png(extra: 19 * mib / 10)),
        ]
    }

    /// Refused messages fill the deployment's cap: another user's send is still accepted, and
    /// delivered.
    @Test func refusedFilesTakeNoOtherUsersRoom() async throws {
        try await withServer({ $0.outbox.maxBytes = 6 * Self.mib }) { server in
            var refused: [String] = []
            for _ in 0..<3 { refused.append(try await server.userWithThread().session.token) }
            let (other, thread, _) = try await server.userWithThread()
            server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 3, status: 413)
            for token in refused {
                let sent = try await AttachmentTests.send(server, token: token, Self.screenshot("too big for Discord"))
                #expect(sent.status == .created)
            }
            let usage = try await server.store.outboxUsage(of: nil)
            #expect(usage.failed == 3 && usage.bytes > 5 * Self.mib && usage.queuedBytes == 0)
            let sent = try await AttachmentTests.send(
                server, token: other.token,
                [.init(name: "files", filename: "one.png", contentType: "image/png", data: AttachmentTests.png(extra: Self.mib))])
            #expect(sent.status == .created, "\(String(decoding: sent.body, as: UTF8.self))")
            #expect(server.emulator.messages(inThread: thread).last?.attachmentNames == ["one.png"])
            // A user whose own messages were refused still sends too.
            #expect(try await AttachmentTests.send(server, token: refused[0], Self.screenshot("smaller now")).status == .created)
        }
    }

    /// A user's refused files past their cap: the oldest goes, its text stays, and the message
    /// says so; the newer keep theirs.
    @Test func aUsersRefusedFilesPastTheirCapLetTheOldestGo() async throws {
        try await withServer({ $0.outbox.maxBytesPerUser = 4 * Self.mib }) { server in
            let (user, _, _) = try await server.userWithThread()
            server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 3, status: 413)
            var ids: [String] = []
            for text in ["first", "second", "third"] {
                let sent = try await AttachmentTests.send(server, token: user.token, Self.screenshot(text))
                #expect(sent.status == .created, "\(String(decoding: sent.body, as: UTF8.self))")
                ids.append(try #require(sent.json["id"]?.stringValue))
            }
            let listed = try await server.messages(token: user.token)
            let messages = ids.compactMap { id in listed.first { $0["id"]?.stringValue == id } }
            #expect(messages.map { $0["delivery"]?.stringValue } == ["failed", "failed", "failed"])
            #expect(messages.map { $0["content"]?.stringValue } == ["first", "second", "third"])
            #expect(messages.map { ($0["attachments"]?.arrayValue ?? []).count } == [0, 1, 1])
            #expect(messages[0]["deliveryError"]?["message"]?.stringValue?.contains("files were let go") == true)
            #expect(messages[1]["deliveryError"]?["message"]?.stringValue?.contains("let go") == false)
            let firstID = try #require(Snowflake(ids[0]))
            let first = try #require(try await server.store.outboxItem(firstID))
            #expect(first.files.isEmpty && first.content == "first" && first.failure != nil)
            #expect(try await server.store.outboxUsage(of: nil).failedBytes <= 4 * Self.mib)

            // Retried, it goes with its text alone.
            let retried = try await server.request(.patch, "/v1/messages/\(ids[0])", token: user.token, json: #"{"content":"first"}"#)
            #expect(retried.status == .ok && retried.json["delivery"] == "queued")
            try await server.settled()
            #expect(try await server.messages(token: user.token).first { $0["id"]?.stringValue == ids[0] }?["delivery"] == "sent")
        }
    }

    /// A refused message's files are kept `OUTBOX_FAILED_KEEP_DAYS` after the refusal, then let go.
    @Test func refusedFilesAreLetGoAfterTheKeepDays() async throws {
        let clock = ManualClock()
        try await withServer(time: .driven(by: clock)) { server in
            let (user, _, _) = try await server.userWithThread()
            server.emulator.failRequests("POST", "/channels/{channel_id}/messages", count: 1, status: 413)
            let sent = try await AttachmentTests.send(server, token: user.token, Self.screenshot("kept a week"))
            let id = try #require(Snowflake(sent.json["id"]?.stringValue ?? ""))
            #expect(try await server.store.outboxItem(id)?.failure != nil)

            clock.advance(by: .seconds(6 * 86_400))
            try await server.settled()
            #expect(try await server.store.outboxItem(id)?.files.count == 1)
            clock.advance(by: .seconds(86_400 + 3600))
            try await server.settled()
            let kept = try #require(try await server.store.outboxItem(id))
            #expect(kept.files.isEmpty && kept.content == "kept a week")
            let shown = try #require(try await server.messages(token: user.token).first { $0["id"]?.stringValue == id.description })
            let files = shown["attachments"]?.arrayValue ?? []
            #expect(files.isEmpty)
            #expect(shown["deliveryError"]?["message"]?.stringValue?.contains("kept 7 days") == true)
        }
    }
}
