import DiscordEmulator
import DiscordREST
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import TestSupport
import Testing

@Suite("Discord REST client against the emulator")
struct DiscordClientTests {
    @Test func learnsTheBotUserAndGateway() async throws {
        try await withDiscord { _, client, endpoints in
            let me = try await client.currentUser()
            #expect(me.id == endpoints.botUserID)
            #expect(me.isBot)
            let gateway = try await client.gatewayBot()
            #expect(gateway.url == endpoints.gatewayURL)
            #expect(gateway.sessionStartLimit.remaining > 0)
        }
    }

    @Test func oddRateLimitValuesNeverCrashAndANonDiscord429HoldsEverything() async throws {
        // A manual clock that nothing moves: the budget (shorter than the 60 s hold below) is
        // spent by waits alone, never by a slow machine.
        try await withDiscord(clock: ManualClock(), client: { $0.budget = .seconds(30) }) { emulator, client, _ in
            for value in ["inf", "nan", "-1", "1e300", "soon"] {
                emulator.overrideResetAfter(value)
                _ = try await client.currentUser()
            }
            emulator.overrideResetAfter(nil)
            // Cloudflare's ban page: HTML, no Discord JSON, a Retry-After that is no number.
            emulator.injectEdge429s(count: 1, retryAfter: "nan")
            await #expect(throws: DiscordError.self) { _ = try await client.gatewayBot() }
            // Every route now waits at least a minute: refused at once, without asking Discord.
            do throws(DiscordError) {
                _ = try await client.channel("1")
                Issue.record("expected to be held back")
            } catch .rateLimited(let retryAfter) {
                #expect(retryAfter > .seconds(50))
            } catch {
                Issue.record("unexpected \(error)")
            }
            #expect(emulator.counters.requests("GET", "/channels/{channel_id}") == 0)
            #expect(emulator.counters.requests("GET", "/gateway/bot") == 1)
        }
    }

    @Test func trafficStopsWellBeforeDiscordsInvalidRequestBan() async throws {
        try await withDiscord(client: { $0.invalidRequestCeiling = 3 }) { emulator, client, _ in
            emulator.injectServerErrors(count: 3, status: 403)
            for _ in 0..<3 { await #expect(throws: DiscordError.self) { _ = try await client.currentUser() } }
            #expect(client.invalidRequestsLastTenMinutes == 3)
            do throws(DiscordError) {
                _ = try await client.currentUser()
                Issue.record("expected to be held back")
            } catch .rateLimited(let retryAfter) {
                #expect(retryAfter > .seconds(590))
            } catch {
                Issue.record("unexpected \(error)")
            }
            #expect(emulator.counters.requests("GET", "/users/@me") == 3)
        }
    }

    @Test func startsAForumThreadWithTheStarterPostInOneCall() async throws {
        try await withDiscord { emulator, client, endpoints in
            let thread = try await client.startForumThread(
                in: endpoints.forumChannelID, .named("User 123 · 1.4.0", "My app crashes"))
            #expect(thread.channel.parentId == endpoints.forumChannelID)
            #expect(thread.channel.type == 11)
            #expect(thread.message.id == thread.channel.id)
            #expect(thread.message.content == "My app crashes")
            #expect(emulator.counters.requests("POST", "/channels/{channel_id}/threads") == 1)
            #expect(emulator.counters.requests("POST", "/channels/{channel_id}/messages") == 0)
            let fetched = try await client.channel(thread.channel.id)
            #expect(fetched.name == "User 123 · 1.4.0")
        }
    }

    @Test func postsJSONAndMultipartAndPagesNewestFirst() async throws {
        try await withDiscord { emulator, client, endpoints in
            let thread = try await client.startForumThread(in: endpoints.forumChannelID, .named("paging", "first"))
            var posted: [String] = [thread.message.id]
            for index in 1...6 {
                posted.append(try await client.createMessage(in: thread.channel.id, .init(content: "message \(index)")).id)
            }
            let diagnostics = Data(#"{"app":{"version":"1.4.0"}}"#.utf8)
            let upload = try await client.createMessage(
                in: thread.channel.id,
                .init(content: "", files: [DiscordFile(filename: "diagnostics.json", contentType: "application/json", data: diagnostics)]))
            posted.append(upload.id)
            #expect(upload.attachments.map(\.filename) == ["diagnostics.json"])
            #expect(upload.attachments.first?.size == diagnostics.count)
            let download = try await HTTPClient.shared.execute(HTTPClientRequest(url: upload.attachments[0].url), timeout: .seconds(5))
            #expect(Data(buffer: try await download.body.collect(upTo: 1 << 20)) == diagnostics)

            let newest = try await client.messages(in: thread.channel.id, limit: 3)
            #expect(newest.map(\.id) == Array(posted.suffix(3).reversed()))
            let older = try await client.messages(in: thread.channel.id, before: newest.last!.id, limit: 3)
            #expect(older.map(\.id) == Array(posted.dropLast(3).suffix(3).reversed()))
            let afterFirst = try await client.messages(in: thread.channel.id, after: posted[0], limit: 2)
            #expect(afterFirst.map(\.id) == [posted[2], posted[1]])
            #expect(emulator.recordedRequests.contains { $0.fileNames == ["diagnostics.json"] })
        }
    }

    @Test func repeatedNoncePostsOnce() async throws {
        try await withDiscord { emulator, client, endpoints in
            let thread = try await client.startForumThread(in: endpoints.forumChannelID, .named("nonce", "hi"))
            let message = DiscordMessageCreate(content: "only once", nonce: "retry-key-1")
            let first = try await client.createMessage(in: thread.channel.id, message)
            let second = try await client.createMessage(in: thread.channel.id, message)
            #expect(first.id == second.id)
            #expect(emulator.messages(inThread: thread.channel.id).filter { $0.content == "only once" }.count == 1)
            // Discord keeps no nonce: the create's answer carries it, a read never does.
            #expect(first.nonce == .string("retry-key-1"))
            #expect(try await client.message(first.id, in: thread.channel.id).nonce == nil)
            #expect(try await client.messages(in: thread.channel.id).allSatisfy { $0.nonce == nil })
        }
    }

    @Test func userTextPingsNobody() async throws {
        try await withDiscord { emulator, client, endpoints in
            let thread = try await client.startForumThread(
                in: endpoints.forumChannelID, .named("mentions", "@everyone look <@\(endpoints.agentUserID)>"))
            let reply = try await client.createMessage(in: thread.channel.id, .init(content: "@here again"))
            #expect(!thread.message.mentionEveryone)
            #expect(thread.message.mentions.isEmpty)
            #expect(!reply.mentionEveryone)
            #expect(emulator.counters.everyonePings == 0)
        }
    }

    @Test func mapsDiscordErrorsToTypedErrors() async throws {
        // No 403 pause: the thread is refused three ways in a row, each asked of Discord.
        try await withDiscord(client: { $0.forbiddenPause = .zero }) { emulator, client, endpoints in
            func code(_ call: () async throws -> Void) async -> DiscordErrorCode? {
                do {
                    try await call()
                    return nil
                } catch {
                    return (error as? DiscordError)?.apiError?.code
                }
            }
            let thread = try await client.startForumThread(in: endpoints.forumChannelID, .named("errors", "hi"))
            let id = thread.channel.id

            #expect(await code { _ = try await client.createMessage(in: id, .init(content: String(repeating: "x", count: 2001))) } == .invalidFormBody)
            #expect(await code { _ = try await client.createMessage(in: id, .init(content: "")) } == .emptyMessage)
            #expect(await code { _ = try await client.messages(in: id, limit: 101) } == .invalidFormBody)
            #expect(await code { _ = try await client.addReaction("not-an-emoji", to: id, in: id) } == .unknownEmoji)
            #expect(await code { _ = try await client.createMessage(in: endpoints.forumChannelID, .init(content: "x")) } == .nonTextChannel)
            let big = DiscordFile(filename: "big.bin", data: Data(count: 10 * 1024 * 1024 + 1))
            #expect(await code { _ = try await client.createMessage(in: id, .init(content: "", files: [big])) } == .requestTooLarge)

            emulator.setForumRequiresTag(true)
            #expect(await code { _ = try await client.startForumThread(in: endpoints.forumChannelID, .named("t", "x")) } == .tagRequired)
            var tagged = DiscordForumThreadCreate.named("tagged", "x")
            tagged.appliedTags = [emulator.forumTagIDs[0]]
            #expect(try await client.startForumThread(in: endpoints.forumChannelID, tagged).channel.appliedTags == [emulator.forumTagIDs[0]])

            try emulator.lockThread(id)
            #expect(await code { _ = try await client.createMessage(in: id, .init(content: "x")) } == .threadLocked)
            try emulator.archiveThread(id, locked: true)
            #expect(await code { _ = try await client.createMessage(in: id, .init(content: "x")) } == .threadArchived)
            try emulator.deleteThread(id)
            #expect(await code { _ = try await client.createMessage(in: id, .init(content: "x")) } == .unknownChannel)
            #expect(await code { _ = try await client.channel("not-a-snowflake") } == .invalidFormBody)
        }
    }

    @Test func badTokenIsUnauthorized() async throws {
        try await withDiscord(client: { $0.token = "wrong" }) { _, client, _ in
            await #expect {
                _ = try await client.currentUser()
            } throws: { error in
                (error as? DiscordError)?.apiError?.status == 401
            }
        }
    }

    @Test func postingToAnArchivedThreadUnarchivesIt() async throws {
        try await withDiscord { emulator, client, endpoints in
            let thread = try await client.startForumThread(in: endpoints.forumChannelID, .named("archived", "hi"))
            try emulator.archiveThread(thread.channel.id)
            _ = try await client.createMessage(in: thread.channel.id, .init(content: "back"))
            let channel = try await client.channel(thread.channel.id)
            #expect(channel.threadMetadata?.archived == false)
        }
    }

    @Test func aChannelThatAnswers403PausesThatRouteUntilThePausePasses() async throws {
        let clock = ManualClock()
        try await withDiscord(clock: clock, client: { $0.forbiddenPause = .seconds(1) }) { emulator, client, endpoints in
            let thread = try await client.startForumThread(in: endpoints.forumChannelID, .named("locked", "hi"))
            let other = try await client.startForumThread(in: endpoints.forumChannelID, .named("open", "hi"))
            try emulator.lockThread(thread.channel.id)
            func post(_ channel: String) async -> DiscordAPIError? {
                do {
                    _ = try await client.createMessage(in: channel, .init(content: "x"))
                    return nil
                } catch {
                    return error.apiError
                }
            }
            let route = ("POST", "/channels/{channel_id}/messages")
            #expect(await post(thread.channel.id)?.code == .threadLocked)
            #expect(emulator.counters.requests(route.0, route.1) == 1)
            // The same answer, unsent: the caller still learns the thread is locked.
            let paused = await post(thread.channel.id)
            #expect(paused?.status == 403)
            #expect(paused?.code == .threadLocked)
            #expect(emulator.counters.requests(route.0, route.1) == 1)
            // Other channels, and other routes on the paused one, still go.
            #expect(await post(other.channel.id) == nil)
            #expect(try await client.channel(thread.channel.id).id == thread.channel.id)
            #expect(emulator.counters.requests(route.0, route.1) == 2)
            #expect(client.invalidRequestsLastTenMinutes == 1)

            // Paused to the end of the pause, and not a moment longer.
            clock.advance(by: .milliseconds(999))
            #expect(await post(thread.channel.id)?.status == 403)
            #expect(emulator.counters.requests(route.0, route.1) == 2)
            clock.advance(by: .milliseconds(1))
            #expect(await post(thread.channel.id)?.code == .threadLocked)
            #expect(emulator.counters.requests(route.0, route.1) == 3)
        }
    }

    @Test func retriesServerErrorsThenGivesUpInsideTheBudget() async throws {
        // The backoffs sleep on a clock the test moves as soon as the client sleeps: the budget
        // is spent by the client's own waits, however slow the machine.
        let clock = ManualClock()
        // The budget is on the test's clock, which stands still while a real HTTP exchange runs:
        // generous, so a loaded machine's slow exchange does not spend it.
        let budget = Duration.seconds(30)
        try await withDiscord(clock: clock, client: { $0.budget = budget; $0.backoffBase = .milliseconds(20) }) { emulator, client, endpoints in
            let thread = try await client.startForumThread(in: endpoints.forumChannelID, .named("faults", "hi"))
            emulator.injectServerErrors(count: 2, status: 502)
            let message = try await clock.drive {
                try await client.createMessage(in: thread.channel.id, .init(content: "after faults", nonce: "n-1"))
            }
            #expect(message.content == "after faults")
            #expect(emulator.counters.serverErrorsInjected == 2)

            emulator.injectServerErrors(count: 10_000, status: 503)
            let started = clock.now
            let posts = emulator.counters.requests("POST", "/channels/{channel_id}/messages")
            await #expect {
                _ = try await clock.drive {
                    try await client.createMessage(in: thread.channel.id, .init(content: "never", nonce: "n-2"))
                }
            } throws: { error in
                if case .unavailable = error as? DiscordError { return true }
                return false
            }
            // It retried, and stopped before its budget ran out rather than sleeping past it.
            #expect(emulator.counters.requests("POST", "/channels/{channel_id}/messages") - posts > 2)
            #expect(started.duration(to: clock.now) < budget)
            emulator.injectServerErrors(count: 0)
            #expect(emulator.messages(inThread: thread.channel.id).contains { $0.content == "never" } == false)
        }
    }

    @Test func listsActiveThreads() async throws {
        try await withDiscord { emulator, client, endpoints in
            let open = try await client.startForumThread(in: endpoints.forumChannelID, .named("open", "hi"))
            let closed = try await client.startForumThread(in: endpoints.forumChannelID, .named("closed", "hi"))
            _ = try await client.modifyThread(closed.channel.id, archived: true)
            let active = try await client.activeThreads(guildID: endpoints.guildID)
            #expect(active.threads.map(\.id) == [open.channel.id])
        }
    }
}
