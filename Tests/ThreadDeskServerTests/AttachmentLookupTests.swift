import AsyncHTTPClient
import DiscordREST
import Foundation
import HTTPTypes
import NIOCore
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore
@testable import ThreadDeskServer

/// `GET /v1/attachments/{id}` reads the user's record as the request came; a delivery that ends
/// meanwhile moves the user's first message out of its placeholder thread and its files out of
/// the outbox. The file is still found: looked for again with the record as it is now.
@Suite("Attachments looked up after a delivery") struct AttachmentLookupTests {
    @Test func aFileAskedForWithARecordADeliveryOutdatedIsStillFound() async throws {
        try await withServer { server in
            let user = try await server.session()
            let png = AttachmentTests.png()
            let reply = try await AttachmentTests.send(
                server, token: user.token, [.init(name: "content", data: Data("a screenshot".utf8)), .init(name: "files", filename: "shot.png", contentType: "image/png", data: png)])
            #expect(reply.status == .created)
            let id = try #require(reply.json["attachments"]?[0]?["id"]?.stringValue.flatMap { Snowflake($0) })
            let userID = try #require(UserID(user.userId))
            // Delivered (settled): the message is in the user's thread, the outbox holds nothing.
            let now = try #require(try await server.store.user(userID))
            #expect(now.threadID != nil && now.pendingThread == nil)
            // The record as a request that came before the delivery read it: no thread yet, a placeholder.
            var before = now
            (before.threadID, before.pendingThread) = (nil, "1234567890123456789")

            let cdnClient = DiscordCDN.makeClient()
            let proxy = AttachmentProxy(
                store: server.store, discord: server.discordClient,
                cdn: DiscordCDN(apiBaseURL: server.configuration.discordAPIURL, httpClient: { cdnClient }), metrics: ServerMetrics(), logger: testLogger(),
                now: { Date() })
            do {
                let download = try await proxy.download(id, record: before, range: nil) {}
                var bytes = Data()
                for try await chunk in download.bytes { bytes.append(contentsOf: chunk.readableBytesView) }
                #expect(download.attachment.id == id && bytes == png)
            } catch {
                try await cdnClient.shutdown()
                throw error
            }
            try await cdnClient.shutdown()
        }
    }
}
