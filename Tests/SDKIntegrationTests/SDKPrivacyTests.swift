import DiscordEmulator
import Foundation
import Testing
import TestSupport
import ThreadDeskKit
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

/// The user's data through the SDK: `deleteMyData()` and `exportMyData()`.
@Suite("ThreadDeskKit: the user's data", .timeLimit(.minutes(2)))
struct SDKPrivacyTests {
    /// The account-deletion button: everything on the server goes, the thread is settled, this
    /// device forgets the session; a second call, or a device whose erasure answer was lost, is
    /// fine; the next `open()` starts afresh.
    @Test func deleteMyDataErasesTheUserAndIsSafeToRepeat() async throws {
        try await withSDKServer { server in
            let client = server.client()
            try await client.open(installation: ["appVersion": "1.0"])
            try await client.send("please delete me")
            try await client.registerPushToken(Data(repeating: 0xAB, count: 32), environment: .development)
            let thread = try await server.thread(of: client)
            let id = try requireValue(await client.userID.flatMap { UserID($0) }, "no session")
            // The same app launched a second time still holds the session in memory: it stands for a
            // client whose first erasure went through but whose answer was lost.
            let stale = server.client()
            #expect(try await stale.open().userId == id.rawValue)

            try await client.deleteMyData()
            #expect(try await server.store.user(id) == nil)
            #expect(await client.userID == nil)
            #expect(server.emulator.threads().first { $0.id == thread }?.locked == true)
            try await client.deleteMyData()
            try await stale.deleteMyData()
            #expect(await stale.userID == nil)

            let fresh = try await client.open()
            #expect(fresh.userId != id.rawValue, "a generated id: a new user")
            #expect(try await client.messages().messages.isEmpty)
        }
    }

    /// With accounts (`userID` + `userHash`), a reinstall that holds no session still erases the
    /// account's data, and Discord refusing is thrown (after the SDK's retries) with the session
    /// kept for the next attempt.
    @Test func anAccountIsErasedFromAFreshInstallAndFailuresAreThrown() async throws {
        let secret = String(repeating: "s", count: 40)
        try await withSDKServer({ $0.identitySecret = secret }) { server in
            let proof: @Sendable (String) async throws -> String = { IdentityVerifier(secret: secret).userHash(for: UserID($0)!) }
            let phone = server.client(device: "phone", userID: "account-erase-1") { $0.userHash = proof }
            try await phone.open()
            try await phone.send("my account's words")
            // Delivered (its thread made) before Discord starts refusing: the erasure then meets the refusal
            // on the account's thread.
            try await server.settled()
            let id = UserID("account-erase-1")!

            let reinstalled = server.client(device: "new-phone", userID: "account-erase-1") { $0.userHash = proof }
            server.emulator.injectServerErrors(count: 1_000, status: 400)
            do {
                try await reinstalled.deleteMyData()
                Issue.record("Discord refused; the erasure cannot have happened")
            } catch let error as ThreadDeskError {
                guard error.isServer(status: 502) else { throw error }
                #expect(error.code == .discordRejected)
            }
            #expect(try await server.store.user(id) != nil)
            #expect(await reinstalled.userID == id.rawValue, "the session is kept for the retry")

            server.emulator.injectServerErrors(count: 0)
            try await reinstalled.deleteMyData()
            #expect(try await server.store.user(id) == nil)
            // The other device's token is gone too: its next call gets a new session, and nothing of the old.
            #expect(try await phone.messages().messages.isEmpty)
        }
    }

    /// The export through the SDK is the conversation the app shows, read in pages, and the facts.
    @Test func exportMyDataIsTheWholeConversationAndTheFacts() async throws {
        try await withSDKServer { server in
            let client = server.client()
            try await client.open(installation: ["appVersion": "4.2"])
            for index in 1...3 { try await client.send("message \(index)") }
            let thread = try await server.thread(of: client)
            try server.emulator.replyAsAgent(inThread: thread, content: "an answer")
            try server.emulator.postNote(inThread: thread, content: "not for the user")
            try await server.settled()
            try #require(try await client.messages().messages.count == 4, "the reply listed")

            let export = try await client.exportMyData(pageSize: 3)
            #expect(export.messages == (try await client.messages(limit: 100)).messages)
            #expect(!export.hasMore)
            #expect(export.user.userId == (await client.userID) && export.user.installation?["appVersion"] == "4.2")
            #expect(export.user.unreadCount == 1 && !export.user.pushTokenRegistered)
            let firstPage = try await client.exportMyData(after: nil, limit: 3)
            #expect(firstPage.messages.count == 3 && firstPage.hasMore)
        }
    }
}
