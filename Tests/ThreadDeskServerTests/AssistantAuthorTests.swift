import APNsEmulator
import AssistEmulator
import DiscordEmulator
import DiscordGateway
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer
import ThreadDeskStore
import ThreadDeskWire

/// The assistant as an author: what ThreadDesk posts through the forum's webhook under the app's
/// assistant name is the assistant's everywhere the user looks (the list, the stream, the unread
/// count, a push), also once the mirror is rebuilt from Discord; the thread still needs a person.
@Suite("The assistant's answers", .timeLimit(.minutes(3)))
struct AssistantAuthorTests {
    /// Answers while away on, so the app has an assistant name; no drafts, and a provider nobody
    /// listens on (these tests post the answers themselves).
    static func answersOn(_ configuration: inout ServerConfiguration) {
        configuration.assist.url = "http://127.0.0.1:9/v1"
        configuration.assist.model = "none"
        configuration.assist.drafts = false
        configuration.assist.auto = .away
    }

    /// How the server speaks in the forum, with each app's assistant name as the server has it.
    static func voice(_ server: Harness) -> SupportVoice {
        let names = server.configuration.catalog.apps.compactMap { app in server.configuration.assist.assistantName(for: app).map { (app.forumChannelID, $0) } }
        return SupportVoice(
            discord: server.discordClient, locks: server.store, settings: server.configuration.desk,
            assistantNames: Dictionary(names, uniquingKeysWith: { first, _ in first }), logger: testLogger())
    }

    /// The messages the user is shown, by id.
    static func shown(_ server: Harness, _ token: String) async throws -> [String: JSON] {
        let messages = try await server.messages(token: token)
        return Dictionary(messages.compactMap { message in message["id"]?.stringValue.map { ($0, message) } }, uniquingKeysWith: { first, _ in first })
    }

    @Test func anAnswerUnderTheAssistantsNameIsTheAssistantsAndTheThreadStillNeedsAReply() async throws {
        try await withServer(gateway: true, { configuration in
            configuration.statusTags = StatusTagNames()
            Self.answersOn(&configuration)
        }) { server in
            try await server.settled()
            try #require(try await StatusTagTests.forumTags(server).count == 5, "the forum's status tags")
            let tags = try await StatusTagTests.forumTags(server)
            let (needsReply, waiting) = (try #require(tags["needs reply"]), try #require(tags["waiting on user"]))
            let (user, thread, device) = try await server.userWithThread(first: "Sync is stuck")
            try await server.settled()
            try #require(StatusTagTests.appliedTags(server, thread) == [needsReply], "needs reply after the user's message")
            let stream = try await LiveTests.stream(server, user.token)
            defer { stream.close() }

            let answer = try await Self.voice(server).answer("Pull down to refresh.", in: thread, of: server.discord.forumChannelID)
            #expect(answer.webhookId != nil && answer.author.username == "Assistant")
            let created = try await stream.next("the automatic answer") { $0.name == "message.created" && $0.json["id"] as? String == answer.id }
            #expect(created.json["author"] as? String == "assistant" && created.json["authorName"] as? String == "Assistant")
            try await stream.next("the unread count") { $0.name == "unread" && $0.json["count"] as? Int == 1 }
            try await server.settled()

            let shown = try #require(try await Self.shown(server, user.token)[answer.id])
            #expect(shown["author"]?.stringValue == "assistant" && shown["authorName"]?.stringValue == "Assistant")
            #expect(shown["content"]?.stringValue == "Pull down to refresh." && shown["delivery"]?.stringValue == "sent")
            #expect(try await server.request(.get, "/v1/unread", token: user.token).json["count"]?.intValue == 1)
            #expect(try await server.mirrored(answer.id)?.author == .assistant)
            // Pushed as a reply is, with the unread count as the badge.
            try #require(server.apns.deliveries(to: device).map(PushTests.messageID) == [answer.id], "the answer's push")
            #expect(server.apns.deliveries(to: device).first?.aps["badge"] as? Int == 1)
            // An automatic answer answers for nobody: still needs a reply, until an agent gives one.
            #expect(StatusTagTests.appliedTags(server, thread) == [needsReply])
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Fixed on our side.")
            try await server.settled()
            #expect(StatusTagTests.appliedTags(server, thread) == [waiting])
        }
    }

    @Test func aWebhookPostUnderAnyOtherNameIsSupportAndNoAgentPostsAsTheAssistant() async throws {
        try await withServer(gateway: true, Self.answersOn) { server in
            let (user, thread, _) = try await server.userWithThread()
            let (voice, forum) = (Self.voice(server), server.discord.forumChannelID)
            let agent = try await voice.say("Hi, Ana here.", in: thread, of: forum, as: "Ana")
            // An agent whose name is the assistant's, spaces and case aside, speaks under the team's name.
            let posing = try await voice.say("Hello.", in: thread, of: forum, as: "  assistant ")
            #expect(posing.author.username == server.configuration.desk.teamName)
            try await server.settled()
            let shown = try await Self.shown(server, user.token)
            #expect(shown[agent.id]?["author"]?.stringValue == "support" && shown[agent.id]?["authorName"]?.stringValue == "Ana")
            #expect(shown[posing.id]?["author"]?.stringValue == "support" && shown[posing.id]?["authorName"]?.stringValue == "Support")
            #expect(try await server.mirrored(agent.id)?.author == .support)
            #expect(try await server.mirrored(posing.id)?.author == .support)
        }
    }

    /// The reconciler rebuilds the mirror from Discord's history: an answer the feed missed is the
    /// assistant's there too.
    @Test func anAnswerOnlyAReconciliationReadsIsTheAssistants() async throws {
        try await withServer(Self.answersOn) { server in
            let (user, thread, _) = try await server.userWithThread()
            #expect(try await server.forward(try MirrorTests.events([.alive])).status == .ok)
            try await MirrorTests.reconciled(server)
            let runs = try await server.metric("threaddesk_catch_ups_total")

            // The feed misses both.
            let voice = Self.voice(server)
            let answer = try await voice.answer("Pull down to refresh.", in: thread, of: server.discord.forumChannelID)
            let agent = try await voice.say("Did that help?", in: thread, of: server.discord.forumChannelID, as: "Ana")
            #expect(try await server.mirrored(answer.id) == nil)
            #expect(try await server.forward(try MirrorTests.events([.gap])).status == .ok)
            try await MirrorTests.reconciled(server, runs: runs + 1)
            try await server.settled()

            #expect(try await server.mirrored(answer.id)?.author == .assistant)
            #expect(try await server.mirrored(agent.id)?.author == .support)
            let shown = try await server.messages(token: user.token)
            #expect(shown.map { $0["author"]?.stringValue } == ["user", "assistant", "support"])
            #expect(shown.map { $0["authorName"]?.stringValue } == [nil, "Assistant", "Ana"])
            #expect(try await server.request(.get, "/v1/unread", token: user.token).json["count"]?.intValue == 2)
        }
    }

    /// An agent whose display name is the assistant's may not reply: the user would take the
    /// reply for an automatic answer. Nothing is posted; an agent of another name replies as ever.
    @Test func anAgentNamedLikeTheAssistantIsRefusedAReply() async throws {
        try await withServer(gateway: true, { configuration in
            DeskTests.deskOn(&configuration)
            Self.answersOn(&configuration)
        }) { server in
            let (user, thread, _) = try await server.userWithThread()
            let agents = server.emulator.createRole(named: "Agents", permissions: DeskAccessTests.manageThreads)
            let namesake = try server.emulator.addMember(named: "assistant", roles: [agents])
            try server.emulator.allowCommandsInIntegrations(for: server.discord.guildID)
            let before = server.emulator.messages(inThread: thread).count

            let refused = try await DeskTests.run(server, "silent", in: thread, [.string("text", "fixed in 1.4.2")], as: namesake)
            #expect(refused.ephemeral && refused.content?.contains("automatic answers") == true)
            let closing = try await DeskTests.run(server, "close", in: thread, [.string("message", "Bye!")], as: namesake)
            #expect(closing.content?.contains("automatic answers") == true)
            try await server.settled()
            #expect(server.emulator.counters.webhookExecutions == 0 && server.emulator.messages(inThread: thread).count == before)
            #expect(DeskTests.thread(server, thread)?.archived == false, "a refused /close closes nothing")

            // The card is no reply: the namesake may look; and the team's agent replies as ever.
            let card = try await DeskTests.run(server, "user", in: thread, as: namesake)
            #expect(card.content?.contains("**User**") == true)
            let sent = try await DeskTests.run(server, "silent", in: thread, [.string("text", "fixed in 1.4.2")])
            #expect(sent.content?.contains("Sent without a notification") == true)
            #expect(server.emulator.counters.webhookExecutions == 1)
            #expect(try await server.messages(token: user.token).last?["author"]?.stringValue == "support")
        }
    }

    /// The assistant's answer answers for nobody: the draft for the user's message stays for an
    /// agent, no new draft is asked for, and an agent named like the assistant cannot send it.
    @Test func anAutomaticAnswerLeavesTheDraftForAnAgent() async throws {
        try await DraftTests.withAssist({ $0.assist.auto = .away }) { server, assist in
            assist.setPermanentOutcome(.answer("Hold the reset button."))
            let (user, thread, _) = try await server.userWithThread(first: "How do I reset it?")
            try await server.settled()
            let note = try #require(DraftTests.draftNotes(server, thread).first)
            let answer = try await Self.voice(server).answer("Pull down to refresh.", in: thread, of: server.discord.forumChannelID)
            try await server.settled()
            try #require(try await server.mirrored(answer.id)?.author == .assistant, "the answer mirrored")
            let kept = try #require(server.emulator.messages(inThread: thread).first { $0.id == note.id })
            #expect(kept.buttons.count == 3 && kept.content.hasPrefix(":ninja: 🤖 Draft answer"), "the draft still waits for an agent")
            #expect(assist.recordedRequests.count == 1, "the answer asks for no draft")
            #expect(server.emulator.counters.webhookExecutions == 1)

            let agents = server.emulator.createRole(named: "Agents", permissions: DeskAccessTests.manageThreads)
            let namesake = try server.emulator.addMember(named: "Assistant", roles: [agents])
            let refused = try server.emulator.clickButton(messageID: note.id, inChannel: thread, customID: try DraftTests.button(note, "Send"), as: namesake)
            try await server.settled()
            let refusal = try #require(server.emulator.interaction(refused.id))
            #expect(refusal.ephemeral && refusal.content?.contains("automatic answers") == true)
            #expect(server.emulator.counters.webhookExecutions == 1)

            _ = try server.emulator.clickButton(messageID: note.id, inChannel: thread, customID: try DraftTests.button(note, "Send"))
            try await server.settled()
            #expect(server.emulator.counters.webhookExecutions == 2)
            let shown = try await server.messages(token: user.token)
            #expect(shown.map { $0["author"]?.stringValue } == ["user", "assistant", "support"])
            #expect(shown.last?["content"]?.stringValue == "Hold the reset button.")
        }
    }

    /// What the model reads: the assistant's lines are its own, neither the user's nor an agent's.
    @Test func aDraftsPromptLabelsTheAssistantsLines() throws {
        let thread = Snowflake(7)
        func line(_ id: UInt64, _ author: MessageAuthor, _ text: String) -> MirroredMessage {
            MirroredMessage(
                id: Snowflake(id), threadID: thread, author: author, authorID: nil, authorUsername: "", authorName: nil, type: 0, content: text,
                attachments: [], replyTo: nil, createdAt: "", editedAt: nil, visible: true)
        }
        let prompt = DraftPrompt(
            .draft, app: "Acme", conversation: [line(1, .user, "It froze"), line(2, .assistant, "Restart it"), line(3, .support, "Which version?")],
            matches: [], installation: nil, maxCharacters: 500, canary: "cnry-test")
        let data = try #require(try JSONSerialization.jsonObject(with: Data(prompt.data.utf8)) as? [String: Any])
        let lines = try #require(data["conversation"] as? [[String: String]])
        #expect(lines.map { $0["from"] } == ["user", "assistant", "support"])
        #expect(prompt.system.contains("\"assistant\" lines are automatic answers"))
    }

    @Test func theAssistantsNameIsNoAgentsNorTheTeams() {
        let reserved = AssistantName("Assistant")
        var settings = DeskSettings()
        #expect(settings.speakerName(" ASSISTANT ", reserved: reserved) == "Support")
        #expect(settings.speakerName("Ana", reserved: reserved) == "Ana")
        #expect(settings.speakerName("Assistant", reserved: nil) == "Assistant")
        settings.teamName = "assistant"
        #expect(settings.speakerName(nil, reserved: reserved) == "Support")
        #expect(DeskSettings().speakerName("Support", reserved: AssistantName("support")) == "Support team")
    }
}
