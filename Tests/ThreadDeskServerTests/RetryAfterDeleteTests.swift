import DiscordREST
import Foundation
import HTTPTypes
import Testing
import ThreadDeskServer

/// A retried send whose message the user deleted meanwhile (found by schemathesis): the retry
/// posts nothing again and answers 409, never the deleted message's empty remains as a 201.
@Suite("A retry after a delete") struct RetryAfterDeleteTests {
    @Test func aRetryOfADeletedMessageIsAConflictNotAnEmptyMessage() async throws {
        try await withServer { server in
            let user = try await server.session()
            let sent = try await server.send("soon gone", token: user.token, key: "retry-after-delete")
            #expect(sent.status == .created)
            let id = try #require(sent.json["id"]?.stringValue)
            #expect(try await server.request(.delete, "/v1/messages/\(id)", token: user.token).status == .noContent)
            let posts = server.discordPosts
            let retried = try await server.send("soon gone", token: user.token, key: "retry-after-delete")
            #expect(retried.status == .conflict)
            #expect(retried.errorCode == "retry_in_progress")
            #expect(server.discordPosts == posts)
        }
    }
}
