import AssistClient
import AssistEmulator
import AsyncHTTPClient
import Deadlines
import DiscordEmulator
import DiscordREST
import Foundation
import HummingbirdTesting
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import ServiceLifecycle
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore
@testable import ThreadDeskServer

/// What a draft's send left behind when it was cut off, and what a slow provider may not cost:
/// no answer goes to the user twice without an agent being told it may have gone, and no budget
/// is charged for a call that was never made.
@Suite("Drafts after a cut-off send, and turns that wait", .timeLimit(.minutes(3)))
struct DraftRecoveryTests {
    /// The draft behind a note, as the store has it.
    static func draft(of note: DiscordEmulator.MessageSnapshot, _ server: Harness) async throws -> AssistDraft {
        let id = try #require(DraftCustomID(try DraftTests.button(note, "Send"))).draft
        return try #require(try await server.store.draft(id))
    }

    /// The note as Discord now shows it.
    static func current(_ note: DiscordEmulator.MessageSnapshot, _ server: Harness, _ thread: String) throws -> DiscordEmulator.MessageSnapshot {
        try #require(server.emulator.messages(inThread: thread).first { $0.id == note.id })
    }

    @Test func aSendCutOffByAStopIsNeverSentAgainUnwarned() async throws {
        try await DraftTests.withAssist { server, assist in
            assist.setPermanentOutcome(.answer("Reinstall the app."))
            let (user, thread, _) = try await server.userWithThread(first: "It crashes")
            try await server.settled()
            let note = try #require(DraftTests.draftNotes(server, thread).first)
            // A replica stopped in the middle of Mia's send three minutes ago: the draft was left sending.
            var draft = try await Self.draft(of: note, server)
            (draft.state, draft.actor, draft.updatedAt) = (.sending, "Mia", Date().addingTimeInterval(-180))
            try await server.store.saveDraft(draft)

            let click = try server.emulator.clickButton(messageID: note.id, inChannel: thread, customID: try DraftTests.button(note, "Send"))
            try await server.settled()
            #expect(server.emulator.counters.webhookExecutions == 0, "nothing is sent again before an agent knows it may have gone")
            let told = try #require(server.emulator.interaction(click.id))
            #expect(told.callbackType == 6 && told.followups.first?.contains("may have reached the user") == true, "\(told)")
            let warned = try Self.current(note, server, thread)
            #expect(warned.content.hasPrefix(":ninja: ⚠️ Draft may have been sent by Mia (its send was cut off)"))
            #expect(warned.buttons.map(\.label) == ["Send", "Edit", "Discard"])
            #expect(try await server.store.draft(draft.id)?.state == .uncertain)

            // Clicked again, knowing: it goes, once.
            _ = try server.emulator.clickButton(messageID: note.id, inChannel: thread, customID: try DraftTests.button(note, "Send"))
            try await server.settled()
            #expect(server.emulator.counters.webhookExecutions == 1)
            #expect(try await DraftTests.shown(server, user.token).last?.content == "Reinstall the app.")
            #expect(try await server.store.draft(draft.id)?.state == .sent)
        }
    }

    /// A crash in the middle of a send left its draft `sending`, its note saying "not sent yet"
    /// until someone clicked: the server that starts next gives the send up and warns on the note,
    /// sending nothing.
    @Test func aServerThatStartsWarnsOnTheNotesOfSendsACrashCutOff() async throws {
        try await DraftTests.withAssist { server, assist in
            assist.setPermanentOutcome(.answer("Reinstall the app."))
            let (_, thread, _) = try await server.userWithThread(first: "It crashes")
            try await server.settled()
            let note = try #require(DraftTests.draftNotes(server, thread).first)
            var draft = try await Self.draft(of: note, server)
            (draft.state, draft.actor, draft.updatedAt) = (.sending, "Mia", Date())
            try await server.store.saveDraft(draft)
            #expect(try Self.current(note, server, thread).content.hasPrefix(":ninja: 🤖"))

            // The server as it starts again on the same SQLite file (this process its only user).
            let work = BackgroundWork()
            let restarted = buildApplication(configuration: server.configuration, store: server.store, work: work, logger: testLogger())
            try await restarted.test(.live) { _ in try await work.settled() }
            let warned = try Self.current(note, server, thread)
            #expect(warned.content.hasPrefix(":ninja: ⚠️ Draft may have been sent by Mia (its send was cut off)"))
            #expect(warned.buttons.map(\.label) == ["Send", "Edit", "Discard"])
            #expect(try await server.store.draft(draft.id)?.state == .uncertain)
            #expect(server.emulator.counters.webhookExecutions == 0)
        }
    }

    /// The stop cut the send after Discord took it: the reply is in the thread, so a click finds
    /// the conversation moved on and closes the draft, warning, with nothing sent again.
    @Test func aSendCutOffAfterItWentIsClosedByTheNextClick() async throws {
        try await DraftTests.withAssist { server, assist in
            assist.setPermanentOutcome(.answer("Reinstall the app."))
            let (user, thread, _) = try await server.userWithThread(first: "It crashes")
            try await server.settled()
            let note = try #require(DraftTests.draftNotes(server, thread).first)
            var draft = try await Self.draft(of: note, server)
            // What went before the stop: a draft left sending, and its reply, which Discord took.
            (draft.state, draft.actor, draft.updatedAt) = (.sending, "Mia", Date().addingTimeInterval(-180))
            try await server.store.saveDraft(draft)
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Reinstall the app.")
            try await server.settled()
            #expect(try Self.current(note, server, thread).buttons.count == 3, "a send under way is no draft a reply drops")

            let click = try server.emulator.clickButton(messageID: note.id, inChannel: thread, customID: try DraftTests.button(note, "Send"))
            try await server.settled()
            #expect(server.emulator.counters.webhookExecutions == 0)
            #expect(server.emulator.interaction(click.id)?.followups.first?.contains("the draft is closed") == true)
            let closed = try Self.current(note, server, thread)
            #expect(closed.buttons.isEmpty && closed.content.hasPrefix(":ninja: ⚠️ Draft may have been sent by Mia (look at the thread); closed: an agent replied."))
            #expect(try await server.store.draft(draft.id)?.state == .dropped)
            #expect(try await DraftTests.shown(server, user.token).filter { $0.author == "support" }.count == 1)
        }
    }

    @Test func aDraftThatMayHaveBeenSentClosesWhenTheUserWritesAgain() async throws {
        try await DraftTests.withAssist { server, assist in
            assist.setPermanentOutcome(.answer("Reinstall the app."))
            let (user, thread, _) = try await server.userWithThread(first: "It crashes")
            try await server.settled()
            let note = try #require(DraftTests.draftNotes(server, thread).first)
            var draft = try await Self.draft(of: note, server)
            (draft.state, draft.actor) = (.uncertain, "Mia")
            try await server.store.saveDraft(draft)

            _ = try await server.send("Still crashing", token: user.token)
            try await server.settled()
            let closed = try Self.current(note, server, thread)
            #expect(closed.buttons.isEmpty)
            #expect(closed.content.hasPrefix(":ninja: ⚠️ Draft may have been sent by Mia (look at the thread); closed: the user wrote again."))
            #expect(try await server.store.draft(draft.id)?.state == .replaced)
            #expect(server.emulator.counters.webhookExecutions == 0)
            // The newer message has a draft of its own.
            #expect(DraftTests.draftNotes(server, thread).contains { $0.id != note.id && $0.buttons.count == 3 })
        }
    }

    /// The server's log lines, watched: a test waits for the one that says a stop reached a point.
    final class WatchedLog: Sendable {
        let lines = Watched<[String]>([])

        var logger: Logger { Logger(label: "watched") { _ in Handler(lines: self.lines) } }

        struct Handler: LogHandler {
            let lines: Watched<[String]>
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .info

            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }

            func log(event: LogEvent) {
                let all = metadata.merging(event.metadata ?? [:]) { $1 }
                lines.update { $0.append("\(event.message) \(all)") }
            }
        }
    }

    /// A stop that begins while an agent's Send is on its way to Discord lets it finish: the
    /// reply goes once and the draft says so, instead of staying `sending` for a later click to
    /// guess at. The post is held in the emulator until the drafts have heard of the stop.
    @Test func aStopLetsASendUnderWayFinish() async throws {
        try await AssistEmulator.withRunning(logger: testLogger()) { assist in
            assist.setPermanentOutcome(.answer("Update to 2.1."))
            let endpoints = await assist.endpoints()
            var emulatorConfiguration = DiscordEmulator.Configuration.fastWindows(scale: 0.02)
            emulatorConfiguration.interactionResponseWindow = .seconds(600)
            try await DiscordEmulator.withRunning(configuration: emulatorConfiguration, logger: testLogger()) { emulator in
                let discord = await emulator.endpoints()
                var configuration = ServerConfiguration(
                    discordToken: discord.botToken, discordAPIURL: discord.restURL, guildID: discord.guildID, forumChannelID: discord.forumChannelID,
                    appKey: "test-app-key")
                (configuration.port, configuration.quotas, configuration.statusTags) = (0, .off, nil)
                configuration.desk.commands = false
                configuration.gatewaySecret = "test-gateway-secret"
                configuration.assist.url = endpoints.baseURL
                configuration.assist.model = endpoints.model
                configuration.assist.draftDelay = .zero
                // The drain is most of the grace: a loaded machine's stop fits in it.
                configuration.shutdownGrace = .seconds(60)
                let store = try makeStore(url: "sqlite://\(temporaryStorePath())", logger: testLogger())
                let log = WatchedLog()
                let (ports, portSignal) = AsyncStream.makeStream(of: Int.self)
                let app = buildApplication(
                    configuration: configuration, store: store, inProcessGateway: true, logger: log.logger, onServerRunning: { portSignal.yield($0) })
                let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: testLogger())
                let running = Task { try await group.run() }
                do {
                    var iterator = ports.makeAsyncIterator()
                    let port = try #require(await iterator.next())
                    func post(_ path: String, token: String?, _ body: String) async throws -> JSON {
                        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
                        request.method = .POST
                        request.headers.add(name: "X-App-Key", value: "test-app-key")
                        request.headers.add(name: "Idempotency-Key", value: UUID().uuidString)
                        request.headers.add(name: "Content-Type", value: "application/json")
                        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
                        request.body = .bytes(ByteBuffer(string: body))
                        let answer = try await HTTPClient.shared.execute(request, timeout: .seconds(60)).body.collect(upTo: 1 << 16)
                        return try JSON.parse(Data(buffer: answer))
                    }
                    let token = try #require(try await post("/v1/session", token: nil, "{}")["token"]?.stringValue)
                    _ = try await post("/v1/messages", token: token, #"{"content": "The app freezes"}"#)
                    try await emulator.waitUntil("the draft's note") { emulator in
                        emulator.threads().contains { thread in DraftTests.draftNotes(thread.id, in: emulator).contains { $0.buttons.count == 3 } }
                    }
                    let thread = try #require(emulator.threads().first).id
                    let note = try #require(DraftTests.draftNotes(thread, in: emulator).first)
                    let id = try #require(DraftCustomID(try DraftTests.button(note, "Send"))).draft

                    // The send's post is caught on its way; the stop begins; the drafts hear of it
                    // with the click under way; only then does Discord take the post.
                    let route = "/webhooks/{webhook_id}/{webhook_token}"
                    emulator.holdRequests("POST", route)
                    _ = try emulator.clickButton(messageID: note.id, inChannel: thread, customID: try DraftTests.button(note, "Send"))
                    try await emulator.waitUntil("the send's post") { $0.counters.requestsByRoute["POST \(route)", default: 0] == 1 }
                    await group.triggerGracefulShutdown()
                    try await log.lines.wait(for: "the drafts waiting for the click under way") { lines in
                        lines.contains { $0.hasPrefix("Stopping: waiting for the interactions under way") && $0.contains("drafts") }
                    }
                    emulator.releaseHeldRequests()
                    try await running.value

                    #expect(emulator.counters.webhookExecutions == 1)
                    #expect(try await store.draft(id)?.state == .sent)
                    let settled = try #require(emulator.messages(inThread: thread).first { $0.id == note.id })
                    #expect(settled.content.hasPrefix(":ninja: ✅ Draft sent by") && settled.buttons.isEmpty)
                } catch {
                    emulator.releaseHeldRequests()
                    running.cancel()
                    throw error
                }
            }
        }
    }

    @Test func aTurnWaitsForASlotOnlyAsLongAsItSays() async throws {
        let clock = ManualClock()
        let slots = Slots(limit: 1)
        let (entered, release) = (WakeSignal(), WakeSignal())
        let holder = Task {
            try await slots.run(waitingUpTo: .seconds(1), on: clock) {
                entered.signal()
                _ = await release.wait()
            }
        }
        #expect(await entered.wait(upTo: .seconds(60)), "the first body runs at once")

        // A second waits on the clock; when its patience runs out it runs nothing and says why.
        let impatient = Task { try await slots.run(waitingUpTo: .seconds(5), on: clock) { "ran" } }
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(5))
        await #expect(throws: DeadlineExceeded.self) { try await impatient.value }

        // A third gets the slot the moment the first frees it.
        let patient = Task { try await slots.run(waitingUpTo: .seconds(5), on: clock) { "ran" } }
        try await clock.waitForSleepers(1)
        release.signal()
        try await holder.value
        #expect(try await patient.value == "ran")
        #expect(slots.running == 0)
    }

    @Test func aCallWithNoTimeLeftIsNeverBegunNorCharged() async throws {
        try await AssistEmulator.withRunning(logger: testLogger()) { assist in
            let endpoints = await assist.endpoints()
            var configuration = ServerConfiguration(
                discordToken: "t", discordAPIURL: "http://127.0.0.1:9", guildID: "9", forumChannelID: "201", appKey: "test-app-key")
            configuration.assist.url = endpoints.baseURL
            configuration.assist.model = endpoints.model
            assist.setPermanentOutcome(.answer("An answer."))
            let store = MemoryStore()
            let http = AssistService.makeHTTPClient()
            let metrics = ServerMetrics()
            do {
                let made = AssistService(
                    settings: configuration.assist, catalog: configuration.catalog, httpClient: { http }, ledger: store, metrics: metrics,
                    logger: testLogger(), time: .system)
                let service = try #require(made)
                let app = try #require(configuration.catalog.apps.first)
                let user = try #require(UserID("u1"))
                let request = AssistRequest(messages: [AssistMessage(role: .system, content: "Answer."), AssistMessage(role: .user, content: "Hi")], maxTokens: 100)
                let check = OutputGuard(canary: "canary-0123", systemPrompt: "Answer.", maxCharacters: 100)
                let day = AssistService.day(of: Date())

                // A turn whose time is all but spent (it waited for a slot): refused before the ledger.
                await #expect(throws: AssistRefusal.self) {
                    try await Deadline.within(.seconds(1)) { try await service.complete(request, purpose: .draft, app: app, user: user, guard: check) }
                }
                #expect(assist.recordedRequests.isEmpty)
                #expect(try await store.assistTokensUsed(AssistKey.app(app.id), day: day) == 0)
                #expect(try await store.assistTokensUsed(AssistKey.user(user), day: day) == 0)

                // With its time, the same call is made and charged.
                #expect(try await service.complete(request, purpose: .draft, app: app, user: user, guard: check) == "An answer.")
                #expect(assist.recordedRequests.count == 1)
                #expect(try await store.assistTokensUsed(AssistKey.app(app.id), day: day) > 0)
            } catch {
                try await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }
}
