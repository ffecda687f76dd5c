import APNsEmulator
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

/// The agent's desk: slash commands in the support forum, answered as Discord documents it.
@Suite("The desk's slash commands", .timeLimit(.minutes(3)))
struct DeskTests {
    static func deskOn(_ configuration: inout ServerConfiguration) {
        configuration.desk.commands = true
        configuration.statusTags = StatusTagNames()
    }

    static func thread(_ server: Harness, _ id: String) -> DiscordEmulator.ThreadSnapshot? {
        server.emulator.threads().first { $0.id == id }
    }

    /// Runs a command once the server registered it, and waits for its (last) answer.
    @discardableResult
    static func run(
        _ server: Harness, _ name: String, in thread: String, _ options: [DiscordEmulator.CommandOption] = [], as member: String? = nil,
        until done: @escaping @Sendable (DiscordEmulator.InteractionSnapshot) -> Bool = { $0.content?.isEmpty == false }
    ) async throws -> DiscordEmulator.InteractionSnapshot {
        try await server.settled()
        try #require(server.emulator.commands.contains { $0.name == name }, "/\(name) registered")
        let started = try server.emulator.runCommand(name, inChannel: thread, options: options, as: member)
        try await server.settled()
        try #require(server.emulator.interaction(started.id).map(done) ?? false, "/\(name) answered")
        return try #require(server.emulator.interaction(started.id))
    }

    @Test func statusFollowsAConversationThroughCloseTheUsersNextMessageAndReopen() async throws {
        try await withServer(gateway: true, Self.deskOn) { server in
            try await server.settled()
            try #require(try await StatusTagTests.forumTags(server).count == 5, "the forum's status tags")
            let tags = try await StatusTagTests.forumTags(server)
            let (needsReply, waiting, resolved) = (try #require(tags["needs reply"]), try #require(tags["waiting on user"]), try #require(tags["resolved"]))
            let (user, thread, device) = try await server.userWithThread()
            try await server.settled()
            try #require(StatusTagTests.appliedTags(server, thread) == [needsReply], "needs reply")
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Try restarting")
            try await server.settled()
            try #require(StatusTagTests.appliedTags(server, thread) == [waiting], "waiting on user")

            // /close with a goodbye: sent as support under the agent's name, pushed, then resolved and archived.
            let close = try await Self.run(server, "close", in: thread, [.string("message", "Glad it works now!")])
            #expect(close.ephemeral && close.content?.contains("closed") == true)
            try await server.settled()
            try #require(StatusTagTests.appliedTags(server, thread) == [resolved] && Self.thread(server, thread)?.archived == true, "resolved and archived")
            let goodbye = try #require(try await server.messages(token: user.token).last)
            #expect(goodbye["content"]?.stringValue == "Glad it works now!")
            #expect(goodbye["author"]?.stringValue == "support" && goodbye["authorName"]?.stringValue == "Support Agent")
            let posted = try #require(server.emulator.messages(inThread: thread).last)
            #expect(posted.webhookID != nil && posted.authorName == "Support Agent")
            try await server.settled()
            try #require(server.apns.deliveries(to: device).map(PushTests.messageID).contains(posted.id), "the goodbye's push")

            // The user's next message reopens it, with a note for support.
            #expect(try await server.send("one more thing", token: user.token).status == .created)
            try await server.settled()
            try #require(StatusTagTests.appliedTags(server, thread) == [needsReply] && Self.thread(server, thread)?.archived == false && server.emulator.messages(inThread: thread).contains { $0.content == StatusTags.reopenedNote }, "needs reply, back from the archive, with a note")
            let note = try #require(server.emulator.messages(inThread: thread).first { $0.content == StatusTags.reopenedNote })
            try await server.settled()
            try #require(!(try await server.store.mirroredMessages([Snowflake(note.id)!])).isEmpty, "the note in the mirror")
            let notes = try await server.messages(token: user.token).filter { $0["content"]?.stringValue == StatusTags.reopenedNote }
            #expect(notes.isEmpty, "the note is support's, not the user's")

            // /close again, then /reopen by hand.
            try await Self.run(server, "close", in: thread)
            try await server.settled()
            try #require(Self.thread(server, thread)?.archived == true && StatusTagTests.appliedTags(server, thread) == [resolved], "closed again")
            let reopen = try await Self.run(server, "reopen", in: thread)
            #expect(reopen.ephemeral)
            try await server.settled()
            try #require(Self.thread(server, thread)?.archived == false && StatusTagTests.appliedTags(server, thread) == [needsReply], "reopened")
            // The forum's own tags are still there.
            let after = try await StatusTagTests.forumTags(server)
            #expect(after["open"] == tags["open"] && after["ios"] == tags["ios"])
        }
    }

    /// Discord edits an archived thread only with `archived: false` in the same call: closing a
    /// thread an agent archived by hand still ends resolved and archived.
    @Test func closingAThreadArchivedByHandTagsItAndKeepsItArchived() async throws {
        try await withServer(gateway: true, Self.deskOn) { server in
            let (_, thread, _) = try await server.userWithThread()
            try await server.settled()
            try #require(try await StatusTagTests.forumTags(server).count == 5, "the status tags")
            let resolved = try #require(try await StatusTagTests.forumTags(server)["resolved"])
            _ = try await server.discordClient.modifyThread(thread, archived: true)
            let refusal = await #expect(throws: DiscordError.self) { try await server.discordClient.modifyThread(thread, appliedTags: [resolved]) }
            if case .api(let error)? = refusal { #expect(error.code == .threadArchived) } else { Issue.record("not Discord's refusal: \(String(describing: refusal))") }
            try await Self.run(server, "close", in: thread)
            try await server.settled()
            try #require(StatusTagTests.appliedTags(server, thread) == [resolved] && Self.thread(server, thread)?.archived == true, "resolved, still archived")
        }
    }

    /// A snippet is text support sends: one holding a control character is refused whole.
    @Test func aSnippetWithAControlCharacterIsRefused() async throws {
        try await withServer(gateway: true, Self.deskOn) { server in
            let user = try await server.session()
            #expect(try await server.send("hello", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            let refused = try await Self.run(
                server, "snippets", in: thread, [.subcommand("add", [.string("name", "nul"), .string("text", "Thanks\u{0} for waiting")])])
            #expect(refused.content?.contains("without control characters") == true)
            #expect(try await Snippets(store: server.store).names(startingWith: "").isEmpty)
            let added = try await Self.run(
                server, "snippets", in: thread, [.subcommand("add", [.string("name", "tab"), .string("text", "Thanks\tfor waiting\nBye")])])
            #expect(added.content?.contains("Added") == true)
            // What an agent sends by command or edits in a draft is held to the same rule.
            #expect(Desk.replyProblem("Thanks\u{0}!")?.contains("U+0000") == true)
            #expect(Desk.replyProblem("Thanks\tfor waiting\n") == nil)
        }
    }

    @Test func aSnippetIsFilledInAndSentOnceAsSupport() async throws {
        try await withServer(gateway: true, Self.deskOn) { server in
            let user = try await server.session(#"{"installation":{"appVersion":"2.1.0","osPlatform":"iOS","osVersion":"18.1"}}"#)
            let device = String(repeating: "cd", count: 32)
            let set = try await server.request(.put, "/v1/push-token", token: user.token, json: #"{"token":"\#(device)","environment":"development"}"#)
            #expect(set.status == .noContent)
            #expect(try await server.send("which version do I need?", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))

            let added = try await Self.run(
                server, "snippets", in: thread, [.subcommand("add", [.string("name", "Version"), .string("text", "You run {app_version} on {os}; {nope} stays.")])])
            #expect(added.content?.contains("Added") == true)
            let typed = try server.emulator.autocomplete("snippet", inChannel: thread, options: [.string("name", "ve", focused: true)])
            try await server.settled()
            try #require(server.emulator.interaction(typed.id)?.acknowledged == true, "the autocomplete choices")
            #expect(server.emulator.interaction(typed.id)?.choices == ["version"])

            let sent = try await Self.run(server, "snippet", in: thread, [.string("name", "version")])
            #expect(sent.ephemeral && sent.content?.contains("Sent") == true)
            let text = "You run 2.1.0 on iOS 18.1; {nope} stays."
            let shown = try await server.messages(token: user.token).filter { $0["content"]?.stringValue == text }
            #expect(shown.count == 1 && shown.first?["author"]?.stringValue == "support")
            #expect(shown.first?["authorName"]?.stringValue == "Support Agent")
            try await server.settled()
            try #require(server.apns.deliveries(to: device).count == 1, "the snippet's push")

            // The same interaction delivered again (a daemon's retry, a replay) sends nothing more:
            // Discord refuses its second answer, and that is where ThreadDesk stops.
            let callbacks = { server.emulator.recordedRequests.filter { $0.route == "/interactions/{interaction_id}/{interaction_token}/callback" } }
            let answered = callbacks().count
            try await Self.redeliver(server, sent)
            try await server.settled()
            try #require(callbacks().count == answered + 1 && callbacks().last?.status == 400, "the second delivery's answer refused")
            // A command after it, answered: whatever the second delivery did is done by then.
            try await Self.run(server, "user", in: thread)
            #expect(server.emulator.messages(inThread: thread).filter { $0.content == text }.count == 1)
            #expect(server.emulator.counters.webhookExecutions == 1)
            // One push for the snippet: a later reply's push comes, and the snippet's is still alone.
            let later = try server.emulator.replyAsAgent(inThread: thread, content: "anything else?")
            try await server.settled()
            try #require(server.apns.deliveries(to: device).count == 2, "the later reply's push")
            #expect(server.apns.deliveries(to: device).map(PushTests.messageID).last == later.id)
        }
    }

    /// Hands the server an interaction again, as the gateway daemon would post it.
    static func redeliver(_ server: Harness, _ interaction: DiscordEmulator.InteractionSnapshot) async throws {
        let agent = try JSONDecoder().decode(
            DiscordUser.self, from: Data(#"{"id":"\#(server.discord.agentUserID)","username":"support-agent","globalName":"Support Agent"}"#.utf8))
        let event = ForumEvent.interaction(
            DiscordInteraction(
                id: interaction.id, applicationId: server.discord.botUserID, type: interaction.type, token: interaction.token,
                guildId: server.discord.guildID, channelId: interaction.channelID, member: .init(user: agent, permissions: "8"),
                data: .init(id: "0", name: interaction.commandName, options: nil)))
        let body = String(decoding: try JSONEncoder().encode(ForumEventBatch(events: [event])), as: UTF8.self)
        #expect(try await server.forward(body).json == ["handled": 1, "skipped": 0])
    }

    @Test func silentRepliesAreListedButAlertNobody() async throws {
        try await withServer(gateway: true, Self.deskOn) { server in
            let (user, thread, device) = try await server.userWithThread()
            let silent = try await Self.run(server, "silent", in: thread, [.string("text", "fixed in 1.4.2")])
            #expect(silent.ephemeral)
            let shown = try #require(try await server.messages(token: user.token).last)
            #expect(shown["content"]?.stringValue == "fixed in 1.4.2" && shown["author"]?.stringValue == "support")
            // A loud reply after it: once that is pushed, the silent one was decided.
            let loud = try server.emulator.replyAsAgent(inThread: thread, content: "and 1.4.3 is out")
            try await server.settled()
            try #require(!server.apns.deliveries(to: device).isEmpty, "the loud reply's push")
            #expect(server.apns.deliveries(to: device).map(PushTests.messageID) == [loud.id])
        }
    }

    @Test func theUsersCardIsForTheAgentsEyesOnly() async throws {
        try await withServer(gateway: true, Self.deskOn) { server in
            let user = try await server.session(#"{"installation":{"appVersion":"3.0","buildVersion":"12","deviceModel":"iPhone16,1"}}"#)
            #expect(try await server.send("hi", token: user.token).status == .created)
            let thread = try #require(try await server.thread(of: user.userId))
            let before = server.emulator.messages(inThread: thread).count
            let card = try await Self.run(server, "user", in: thread)
            // Answered at once (not deferred), so within Discord's 3 s, and only the agent sees it.
            #expect(card.callbackType == 4 && card.ephemeral)
            let content = try #require(card.content)
            #expect(content.contains(user.userId) && content.contains("3.0 (12)") && content.contains("iPhone16,1"))
            #expect(content.contains("1 from the user") && content.contains("**Push** no"))
            #expect(server.emulator.messages(inThread: thread).count == before)
        }
    }

    @Test func aMemberWithoutTheRoleIsRefused() async throws {
        let role = EmulatorPreparation { emulator, configuration in
            Self.deskOn(&configuration)
            configuration.desk.roleID = emulator.createRole(named: "support")
        }
        try await withServer(gateway: true, prepare: role) { server in
            let role = try #require(server.configuration.desk.roleID)
            let (_, thread, _) = try await server.userWithThread()
            // The guild's owner, every permission but not the role.
            let refused = try await Self.run(server, "close", in: thread)
            #expect(refused.ephemeral && refused.content?.contains("role") == true)
            // A command answered after it: the refused one archived nothing meanwhile.
            try server.emulator.setRoles(of: server.discord.agentUserID, to: [role])
            try await Self.run(server, "user", in: thread)
            let archiving = server.emulator.recordedRequests.filter { $0.method == "PATCH" && $0.body?["archived"] == .bool(true) }
            #expect(archiving.isEmpty && Self.thread(server, thread)?.archived == false)
            let allowed = try await Self.run(server, "close", in: thread)
            #expect(allowed.content?.contains("Closing") == true)
            try await server.settled()
            try #require(Self.thread(server, thread)?.archived == true, "archived by the member with the role")
        }
    }

    @Test func commandsAreRegisteredOnceAcrossRestartsWhileUnchanged() async throws {
        try await withServer(gateway: true, Self.deskOn) { server in
            // Registered, and noted as registered (the note is written after Discord's answer).
            try await server.settled()
            let noted = try await server.store.globalValue(DeskCommandDefinitions.registeredKey) != nil
            try #require(noted && server.emulator.commands.count == DeskCommandDefinitions.all(permissions: "0").count + CrashCommands.commands.count + StatsCommands.commands.count, "the commands")
            #expect(server.emulator.counters.commandOverwrites == 1)
            #expect(server.emulator.commands.allSatisfy { $0.defaultMemberPermissions == DeskSettings.manageThreads })
            // Another start on the same store (a restart, a replica) registers nothing.
            await Self.desk(server, DeskSettings()).registerCommands()
            #expect(server.emulator.counters.commandOverwrites == 1)
            // A changed set is registered again, once.
            var changed = DeskSettings()
            changed.permissions = "8"
            await Self.desk(server, changed).registerCommands()
            await Self.desk(server, changed).registerCommands()
            #expect(server.emulator.counters.commandOverwrites == 2)
            #expect(server.emulator.commands.allSatisfy { $0.defaultMemberPermissions == "8" })
            // Removed in Discord (an admin, another tool): registered again, though the set is unchanged.
            try await server.discordClient.overwriteGuildCommands(applicationID: server.discord.botUserID, guildID: server.discord.guildID, [])
            await Self.desk(server, changed).registerCommands()
            #expect(server.emulator.counters.commandOverwrites == 4 && server.emulator.commands.count == DeskCommandDefinitions.all(permissions: "8").count + CrashCommands.commands.count + StatsCommands.commands.count)
        }
    }

    static func desk(_ server: Harness, _ settings: DeskSettings) -> Desk {
        let logger = testLogger()
        let metrics = ServerMetrics()
        let users = UserSerializer(store: server.store, metrics: metrics, logger: logger, threadRecorded: ThreadNotes.unrecordedThreadKey)
        let bot = BotIdentity(discord: server.discordClient)
        let ingestion = MirrorIngestion(store: server.store, bot: bot, pushRule: nil, now: { Date() })
        let voice = SupportVoice(
            discord: server.discordClient, locks: server.store, settings: settings, logger: logger)
        var configuration = server.configuration
        configuration.desk = settings
        let away = SupportAvailability(settings: settings, catalog: configuration.catalog, store: server.store, voice: voice, ingestion: ingestion, status: nil, logger: logger, now: { Date() })
        return Desk(
            .init(
                users: users, store: server.store, discord: server.discordClient, ingestion: ingestion, voice: voice,
                snippets: Snippets(store: server.store), away: away, status: nil, translator: nil, settings: settings, catalog: configuration.catalog,
                logger: logger, time: .system, isDraftInteraction: Drafts.isDraftInteraction,
                books: [
                    CrashCommands(store: server.store, now: { Date() }),
                    StatsCommands(numbers: SupportNumbers(store: server.store, catalog: configuration.catalog, time: .system)),
                ]), drain: ShutdownDrain(.seconds(5), time: .system))
    }

    @Test func snippetFieldsComeFromTheInstallation() {
        let installation = InstallationInfo(appVersion: "2.1", osPlatform: "Android", osVersion: "15", locale: "de")
        #expect(Snippets.fill("{app_version}/{os}/{locale}/{device}/{x}/{", installation: installation) == "2.1/Android 15/de/unknown/{x}/{")
        #expect(Snippets.fill("no fields", installation: nil) == "no fields")
        #expect(DeskSettings().speakerName("Discord Mod") == "Support")
        #expect(DeskSettings().speakerName("  Ana ") == "Ana")
    }

    @Test func theDeskIsConfigured() throws {
        var environment = ["DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "1", "DISCORD_FORUM_CHANNEL_ID": "2", "APP_KEY": "k"]
        environment["DESK_ROLE_ID"] = "123"
        environment["DESK_PERMISSIONS"] = "0"
        environment["SUPPORT_NAME"] = "Acme Support"
        let desk = try ServerConfiguration(environment: environment).desk
        #expect(desk.roleID == "123" && desk.permissions == "0" && desk.teamName == "Acme Support" && desk.commands)
        environment["DESK_COMMANDS"] = "off"
        #expect(try ServerConfiguration(environment: environment).desk.commands == false)
        for (name, bad) in [("DESK_ROLE_ID", "role"), ("DESK_PERMISSIONS", "-1"), ("SUPPORT_NAME", "the discord team"), ("DESK_COMMANDS", "maybe")] {
            var wrong = environment
            wrong[name] = bad
            #expect(throws: ServerConfiguration.Problem.self) { try ServerConfiguration(environment: wrong) }
        }
    }
}
