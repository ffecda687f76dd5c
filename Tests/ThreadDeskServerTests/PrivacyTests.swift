import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore
import ThreadDeskWire

/// One way to run the erasure: a store and what `USER_DELETION` says.
struct ErasureCase: Sendable, CustomTestStringConvertible {
    enum Store: String, Sendable { case sqlite, postgres }
    var store: Store
    var deletion: UserDeletion

    var testDescription: String { "\(store.rawValue), USER_DELETION=\(deletion.rawValue)" }

    static var all: [ErasureCase] {
        [Store.sqlite, .postgres].filter { $0 != .postgres || postgresIsAvailable }.flatMap { store in
            UserDeletion.allCases.map { ErasureCase(store: store, deletion: $0) }
        }
    }

    /// A server on this store, with the gateway in process and status tags on (so every kind of
    /// row ThreadDesk keeps about a user exists), and a scan of every table of its database.
    func withServer(_ body: @escaping @Sendable (Harness, _ scan: @escaping @Sendable ([String]) async throws -> RowScan) async throws -> Void)
        async throws
    {
        let deletion = self.deletion
        let configure: @Sendable (inout ServerConfiguration) -> Void = { configuration in
            configuration.privacy.deletion = deletion
            configuration.statusTags = StatusTagNames()
        }
        switch store {
        case .sqlite:
            let path = temporaryStorePath()
            try await ThreadDeskServerTests.withServer(gateway: true, store: "sqlite://\(path)", configure) { server in
                try await body(server) { needles in try scanSQLite(path, for: needles) }
            }
        case .postgres:
            try await withFreshPostgresSchema { url in
                try await ThreadDeskServerTests.withServer(gateway: true, store: url, configure) { server in
                    try await body(server) { needles in try await scanPostgres(url, for: needles) }
                }
            }
        }
    }
}

@Suite("The user's data: erasure")
struct ErasureTests {
    /// `DELETE /v1/me` leaves no row of the user in any table of the database (every column of
    /// every table the schema has, read as text), settles the thread in Discord as configured,
    /// ends the user's streams and tokens, and frees the id; another user keeps everything.
    @Test(arguments: ErasureCase.all)
    func deletingMyDataLeavesNoRowOfMineAnywhere(_ erasure: ErasureCase) async throws {
        try await erasure.withServer { server, scan in
            let port = try #require(server.client.port)
            try await server.settled()
            try #require(server.emulator.counters.identifies >= 1, "the gateway up")
            let (user, thread, device) = try await server.userWithThread(first: "please forget me")
            let installation = #"{"appVersion":"9.9.9","deviceModel":"Phone-of-erase-me"}"#
            #expect(try await server.request(.put, "/v1/installation", token: user.token, json: installation).status == .ok)
            let key = "erase-key-\(UUID().uuidString)"
            #expect(try await server.send("second message", token: user.token, key: key).status == .created)
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "We're on it")
            try server.emulator.postNote(inThread: thread, content: "internal: repro on 17.2")
            try await server.settled()
            try #require(try await server.mirrored(reply.id) != nil, "the reply in the mirror")
            #expect(try await server.request(.post, "/v1/read", token: user.token, json: #"{"messageId":"\#(reply.id)"}"#).status == .ok)
            try await server.settled()
            try #require(try await server.store.globalValue("thread-status/\(thread)") != nil, "the thread's status noted")
            let bob = try await server.userWithThread(device: String(repeating: "cd", count: 32), first: "bob stays")
            let stream = try await EventStreamClient.open(port: port, token: user.token)
            defer { stream.close() }
            try await stream.next("the first unread count") { $0.name == "unread" }

            let needles = [user.userId, thread, UserToken.hash(user.token), device, "Phone-of-erase-me", key]
                + server.emulator.messages(inThread: thread).map(\.id)
            let before = try await scan(needles)
            #expect(before.mentions["users.id"] == 1 && before.mentions["idempotency.key"] == 1, "the scan sees the user: \(before)")
            // The user's own messages are kept under ThreadDesk's ids, Discord's ids of them beside.
            #expect((before.mentions["mirror_messages.id"] ?? 0) + (before.mentions["mirror_aliases.discord_id"] ?? 0) >= 4)
            #expect((before.mentions["mirror_aliases.discord_id"] ?? 0) >= 2)

            let erased = try await server.request(.delete, "/v1/me", token: user.token)
            #expect(erased.status == .noContent, "\(String(decoding: erased.body, as: UTF8.self))")
            try await stream.ends("the user's stream ended")

            switch erasure.deletion {
            case .lock:
                let settled = try #require(server.emulator.threads().first { $0.id == thread })
                #expect(settled.archived && settled.locked)
                let note = try #require(server.emulator.messages(inThread: thread).last)
                #expect(note.authorIsBot && note.content.hasPrefix(":ninja:") && note.content.contains("asked for their data to be deleted"))
            case .delete:
                #expect(!server.emulator.threads().contains { $0.id == thread })
            }
            #expect(server.emulator.threads().contains { $0.id == bob.thread })

            // What Discord tells the gateway about the thread now (the note, the lock, the deletion)
            // is handled before Bob's next reply is: none of it may bring a row of the user back.
            let marker = try server.emulator.replyAsAgent(inThread: bob.thread, content: "still here, Bob")
            try await server.settled()
            try #require(try await server.mirrored(marker.id) != nil, "Bob's reply in the mirror")
            let after = try await scan(needles)
            #expect(after.mentions.isEmpty, "rows of the erased user: \(after)")
            #expect(after.tables.isSuperset(of: ["users", "idempotency", "global_values", "mirror_threads", "mirror_messages"]))
            let bobs = try await scan([bob.session.userId, bob.thread])
            #expect(bobs.mentions["users.id"] == 1 && (bobs.mentions["mirror_messages.thread_id"] ?? 0) >= 2)

            // No token of theirs works; a retry of the erasure gets 401, as documented.
            #expect(try await server.request(.get, "/v1/messages", token: user.token).status == .unauthorized)
            let again = try await server.request(.delete, "/v1/me", token: user.token)
            #expect(again.status == .unauthorized && again.errorCode == "unauthorized")
            #expect(try await server.metric(#"threaddesk_users_erased_total{reason="request"}"#) == 1)

            // The id is free: a new session claims it with nothing but the app key, and starts afresh.
            let fresh = try await server.session(#"{"userId":"\#(user.userId)"}"#)
            #expect(fresh.userId == user.userId)
            #expect(try await server.messages(token: fresh.token).isEmpty)
            #expect(try await server.thread(of: user.userId) == nil)
        }
    }

    /// Discord away: nothing is erased (the user and their token work on), the answer says to try
    /// again, and the retry erases. (A one-second Discord budget, so the outage answers quickly;
    /// the calls before and after it are retried as an app retries a 503.)
    @Test func whenDiscordFailsNothingIsErasedAndARetryErases() async throws {
        try await withServer({ $0.discordBudget = .seconds(1) }) { server in
            let user = try await server.session()
            try await eventually("the first message sent") { try await server.send("hello", token: user.token, key: "first").status == .created }
            let thread = try #require(try await server.thread(of: user.userId))
            server.emulator.injectServerErrors(count: 1_000, status: 503)
            let refused = try await server.request(.delete, "/v1/me", token: user.token)
            #expect(refused.status == .serviceUnavailable && refused.errorCode == "discord_unavailable")
            #expect(refused.headers[.retryAfter] != nil)
            let kept = try #require(try await server.store.user(UserID(user.userId)!))
            #expect(kept.threadID == thread)
            #expect(try await server.store.conversation(of: kept.id, after: nil, limit: 10).messages.count == 1)
            #expect(try await server.request(.get, "/v1/unread", token: user.token).status == .ok, "the token still works")

            server.emulator.injectServerErrors(count: 0)
            try await eventually("the erasure retried until Discord answers") {
                let reply = try await server.request(.delete, "/v1/me", token: user.token)
                if reply.status == .noContent { return true }
                #expect(reply.status == .serviceUnavailable, "\(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
                return false
            }
            #expect(try await server.store.user(UserID(user.userId)!) == nil)
            let settled = try #require(server.emulator.threads().first { $0.id == thread })
            #expect(settled.locked)
            let notes = server.emulator.messages(inThread: thread).filter { $0.content.contains("asked for their data to be deleted") }
            #expect(notes.count == 1, "one note, however many attempts")
        }
    }

    /// A thread an agent deleted, or locked, before the user asked is settled already.
    @Test func aThreadGoneOrLockedAlreadyIsNoObstacle() async throws {
        try await withServer { server in
            let gone = try await server.userWithThread()
            try server.emulator.deleteThread(gone.thread)
            #expect(try await server.request(.delete, "/v1/me", token: gone.session.token).status == .noContent)
            #expect(try await server.store.user(UserID(gone.session.userId)!) == nil)

            let locked = try await server.userWithThread(device: String(repeating: "ef", count: 32))
            try server.emulator.archiveThread(locked.thread, locked: true)
            #expect(try await server.request(.delete, "/v1/me", token: locked.session.token).status == .noContent)
            #expect(try await server.store.user(UserID(locked.session.userId)!) == nil)
            #expect(server.emulator.threads().first { $0.id == locked.thread }?.locked == true)

            // A user who never wrote has no thread: nothing to settle.
            let quiet = try await server.session()
            #expect(try await server.request(.delete, "/v1/me", token: quiet.token).status == .noContent)
            #expect(try await server.store.user(UserID(quiet.userId)!) == nil)
        }
    }

    /// `threaddesk admin user delete` from another process on the same PostgreSQL: the same erasure,
    /// and the user's stream on the running server ends at once.
    @Test(.enabled(if: postgresIsAvailable))
    func anOperatorsErasureFromAnotherProcessEndsTheUsersStreams() async throws {
        try await withFreshPostgresSchema { url in
            try await withServer(store: url) { server in
                let port = try #require(server.client.port)
                let (user, thread, _) = try await server.userWithThread()
                let stream = try await EventStreamClient.open(port: port, token: user.token)
                defer { stream.close() }
                try await stream.next("the first unread count") { $0.name == "unread" }
                let id = try #require(UserID(user.userId))
                let erased = try await PostgresStore.withRunning(url: url, logger: testLogger()) { store in
                    try await UserAdministration(store: store, configuration: server.configuration, logger: testLogger()).delete(id)
                }
                #expect(erased)
                try await stream.ends("the user's stream ended")
                #expect(try await server.request(.get, "/v1/messages", token: user.token).status == .unauthorized)
                #expect(server.emulator.messages(inThread: thread).last?.content.contains("threaddesk admin") == true)
            }
        }
    }

    /// Without a live token there is nothing to erase: 401 as JSON, never a 5xx.
    @Test func erasureNeedsALiveToken() async throws {
        try await withServer { server in
            for token: String? in [nil, "", "nobody~secret", String(repeating: "x", count: 5000), "u_\u{1F600}~secret"] {
                let reply = try await server.request(.delete, "/v1/me", token: token)
                #expect(reply.status == .unauthorized && reply.errorCode == "unauthorized", "\(String(describing: token?.prefix(20)))")
            }
        }
    }
}
