import DiscordEmulator
import DiscordREST
import NIOWebSocket
import Synchronization
import TestSupport
import Testing

@Suite("Discord emulator interactions", .timeLimit(.minutes(1)))
struct InteractionTests {
    @Test func aCommandRunReachesEverySessionAsInteractionCreateInDiscordsShape() async throws {
        try await Harness.withEmulator { emulator, http in
            let commands = try await http.register(supportCommands)
            let thread = try await http.startThread()
            let role = emulator.createRole(named: "Support")
            let helper = try emulator.addMember(named: "helper", roles: [role])
            // Manage Threads through the role: offered `/close` (which asks for it).
            try emulator.setRolePermissions(role, 1 << 34)
            try await withGateway(http.endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                // No intent at all: interactions come regardless.
                try await gateway.identify(token: http.endpoints.botToken, intents: 0)
                _ = try await gateway.dispatch("READY")
                let run = try emulator.runCommand("close", inChannel: thread, options: [.string("reason", "solved")], as: helper)
                let event = try await gateway.dispatch("INTERACTION_CREATE")
                let interaction = try #require(event["d"])
                #expect(interaction["id"]?.stringValue == run.id && run.type == 2 && !run.acknowledged)
                #expect(interaction["type"] == 2 && interaction["version"] == 1)
                #expect(interaction["application_id"]?.stringValue == http.endpoints.applicationID)
                #expect((interaction["token"]?.stringValue?.count ?? 0) >= 100)
                #expect(interaction["guild_id"]?.stringValue == http.endpoints.guildID)
                #expect(interaction["channel_id"]?.stringValue == thread)
                #expect(interaction["channel"]?["type"] == 11 && interaction["channel"]?["parent_id"]?.stringValue == http.endpoints.forumChannelID)
                #expect(interaction["channel"]?["name"] == "support thread")
                let member = try #require(interaction["member"])
                #expect(member["user"]?["id"]?.stringValue == helper)
                #expect(member["roles"] == [.string(role)] && member["nick"] == .null && member["joined_at"]?.stringValue != nil)
                // Computed for the channel: `@everyone`'s and the role's permissions (no overwrites here).
                #expect(member["permissions"]?.stringValue == String(2_248_473_465_835_073 | 1 << 34))
                #expect(interaction["app_permissions"]?.stringValue != nil && interaction["locale"]?.stringValue != nil)
                #expect(interaction["guild_locale"]?.stringValue != nil && interaction["entitlements"] == [])
                #expect(interaction["context"] == 0)
                #expect(interaction["authorizing_integration_owners"]?["0"]?.stringValue == http.endpoints.guildID)
                let data = try #require(interaction["data"])
                #expect(data["id"] == commands.first?["id"] && data["name"] == "close" && data["type"] == 1)
                #expect(data["guild_id"]?.stringValue == http.endpoints.guildID)
                #expect(data["options"] == [["name": "reason", "type": 3, "value": "solved"]])

                // A subcommand: its options nested under it, each value typed as its option is.
                try emulator.runCommand(
                    "ticket", inChannel: thread,
                    options: [.subcommand("assign", [
                        .init(name: "agent", type: 6, value: http.endpoints.agentUserID), .init(name: "priority", type: 4, value: "2"),
                    ])])
                let ticket = try await gateway.dispatch("INTERACTION_CREATE")
                #expect(
                    ticket["d"]?["data"]?["options"] == [[
                        "name": "assign", "type": 1,
                        "options": [
                            ["name": "agent", "type": 6, "value": .string(http.endpoints.agentUserID)],
                            ["name": "priority", "type": 4, "value": 2],
                        ],
                    ]])
                try await gateway.close(.normalClosure)
            }
            #expect(emulator.counters.interactionsCreated == 2)
        }
    }

    @Test func whatTheAgentsClientWouldNotOfferIsRefusedAndNothingDispatched() async throws {
        try await Harness.withEmulator { emulator, http in
            try await http.register(supportCommands)
            let thread = try await http.startThread()
            let moderators = emulator.createRole(named: "Moderators", permissions: 8192)
            let moderator = try emulator.addMember(named: "moderator", roles: [moderators])
            let admin = try emulator.addMember(named: "admin", roles: [emulator.createRole(named: "Admins", permissions: 8)])
            let stranger = try emulator.addMember(named: "stranger")
            func refusal(_ name: String, options: [CommandOption] = [], as member: String? = nil) -> DiscordFailure? {
                do {
                    try emulator.runCommand(name, inChannel: thread, options: options, as: member)
                    return nil
                } catch {
                    return error
                }
            }
            #expect(refusal("nope")?.code == 10063)
            // `/purge` asks for Manage Messages (8192): a member without it never sees it.
            let without = refusal("purge", as: stranger)
            #expect(without?.status == 403 && without?.code == 50013, "\(String(describing: without))")
            #expect(refusal("purge", as: moderator) == nil)
            #expect(refusal("purge", as: admin) == nil, "Administrator")
            #expect(refusal("purge") == nil, "the owner's permissions")
            // The forum's overwrite takes it from the moderators' role in its threads.
            try emulator.setOverwrite(on: http.endpoints.forumChannelID, for: moderators, deny: 8192)
            #expect(refusal("purge", as: moderator)?.code == 50013)
            // An admin allowed the commands to the stranger under Integrations: offered after all.
            try emulator.allowCommandsInIntegrations(for: stranger)
            #expect(refusal("purge", as: stranger) == nil)
            // A required option left out, an option the command lacks, a member that does not exist.
            #expect(refusal("close")?.code == 50035)
            #expect(refusal("close", options: [.string("why", "x")])?.code == 50035)
            #expect(refusal("close", options: [.string("reason", "x")], as: "42")?.code == 10007)
            #expect(emulator.counters.interactionsCreated == 4)
        }
    }

    @Test func oneCallbackPerInteractionAndTheSecondIsAlreadyAcknowledged() async throws {
        try await Harness.withEmulator { emulator, http in
            try await http.register(supportCommands)
            let thread = try await http.startThread()
            let (id, token) = try await Self.run(emulator, in: thread)
            let answer = try await http.callback(id, token: token, ["type": 4, "data": ["content": "Closed."]], withResponse: true)
            #expect(answer.status == 200)
            #expect(answer.json?["interaction"]?["id"]?.stringValue == id)
            let message = try #require(answer.json?["resource"]?["message"])
            #expect(answer.json?["resource"]?["type"] == 4 && message["type"] == 20 && message["content"] == "Closed.")
            #expect(message["author"]?["id"]?.stringValue == http.endpoints.botUserID)
            #expect(message["interaction_metadata"]?["id"]?.stringValue == id)
            #expect(message["webhook_id"]?.stringValue == http.endpoints.applicationID)

            let again = try await http.callback(id, token: token, ["type": 4, "data": ["content": "Closed again."]])
            #expect(again.status == 400 && again.code == 40060)
            let posted = emulator.messages(inThread: thread).last
            #expect(posted?.type == 20 && posted?.content == "Closed." && posted?.authorIsBot == true)
            #expect(posted?.webhookID == http.endpoints.applicationID && posted?.authorName == "ThreadDesk")
            let snapshot = emulator.interaction(id)
            #expect(snapshot?.acknowledged == true && snapshot?.callbackType == 4 && snapshot?.content == "Closed.")
            #expect(snapshot?.ephemeral == false)
        }
    }

    @Test func aCallbackAfterThreeSecondsOrWithAnotherTokenIsAnUnknownInteraction() async throws {
        let clock = ManualClock()
        try await Harness.withEmulator({
            $0.clock = .init(clock)
            $0.interactionResponseWindow = .seconds(3)
        }) { emulator, http in
            try await http.register(supportCommands)
            let thread = try await http.startThread()
            let (onTime, onTimeToken) = try await Self.run(emulator, in: thread)
            let forged = try await http.callback(onTime, token: onTimeToken + "x", ["type": 5])
            #expect(forged.status == 404 && forged.code == 10062)
            clock.advance(by: .seconds(3))
            #expect(try await http.callback(onTime, token: onTimeToken, ["type": 5]).status == 204)

            let (late, lateToken) = try await Self.run(emulator, in: thread)
            clock.advance(by: .milliseconds(3_001))
            let answer = try await http.callback(late, token: lateToken, ["type": 4, "data": ["content": "too late"]])
            #expect(answer.status == 404 && answer.code == 10062)
            #expect(emulator.interaction(late)?.acknowledged == false)
            #expect(!emulator.messages(inThread: thread).contains { $0.content == "too late" })
        }
    }

    @Test func anEphemeralAnswerStaysOffTheChannelAndANormalOneIsAMessageCreate() async throws {
        try await Harness.withEmulator { emulator, http in
            try await http.register(supportCommands)
            let thread = try await http.startThread()
            try await withGateway(http.endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: http.endpoints.botToken)
                _ = try await gateway.dispatch("GUILD_CREATE")
                let (quiet, quietToken) = try await Self.run(emulator, in: thread)
                let whisper = try await http.callback(quiet, token: quietToken, ["type": 4, "data": ["content": "Only you", "flags": 64]])
                #expect(whisper.status == 204)
                let original = try await http.call(.GET, http.webhookPath(token: quietToken) + "/messages/@original", bot: false)
                #expect(original.json?["content"] == "Only you" && original.json?["flags"] == 64)
                #expect(emulator.interaction(quiet)?.ephemeral == true && emulator.interaction(quiet)?.content == "Only you")

                let (loud, loudToken) = try await Self.run(emulator, in: thread)
                #expect(try await http.callback(loud, token: loudToken, ["type": 4, "data": ["content": "Everyone"]]).status == 204)
                // The first MESSAGE_CREATE after both answers is the normal one: the ephemeral made none.
                let created = try await gateway.dispatch("MESSAGE_CREATE")
                #expect(created["d"]?["content"] == "Everyone" && created["d"]?["type"] == 20)
                #expect(created["d"]?["interaction_metadata"]?["id"]?.stringValue == loud)
                try await gateway.close(.normalClosure)
            }
            #expect(emulator.messages(inThread: thread).map(\.content) == ["hello", "Everyone"])
        }
    }

    @Test func aDeferralIsFilledByEditingTheOriginalThenFollowUpsFollow() async throws {
        try await Harness.withEmulator { emulator, http in
            try await http.register(supportCommands)
            let thread = try await http.startThread()
            let (id, token) = try await Self.run(emulator, in: thread)
            let deferred = try await http.callback(id, token: token, ["type": 5], withResponse: true)
            #expect(deferred.json?["interaction"]?["response_message_loading"] == true)
            let loading = try #require(emulator.messages(inThread: thread).last)
            #expect(loading.type == 20 && loading.content.isEmpty)
            let edited = try await http.call(.PATCH, http.webhookPath(token: token) + "/messages/@original", json: ["content": "Done."], bot: false)
            #expect(edited.status == 200 && edited.json?["id"]?.stringValue == loading.id && edited.json?["flags"] == 0)
            #expect(emulator.messages(inThread: thread).last?.content == "Done.")
            let followUp = try await http.call(.POST, http.webhookPath(token: token), json: ["content": "One more thing"], bot: false)
            #expect(followUp.status == 200 && followUp.json?["interaction_metadata"]?["original_response_message_id"]?.stringValue == loading.id)
            let secret = try await http.call(.POST, http.webhookPath(token: token), json: ["content": "Psst", "flags": 64], bot: false)
            #expect(secret.status == 200 && secret.json?["flags"] == 64)
            let snapshot = emulator.interaction(id)
            #expect(snapshot?.callbackType == 5 && snapshot?.content == "Done." && snapshot?.followups == ["One more thing", "Psst"])
            #expect(emulator.messages(inThread: thread).map(\.content) == ["hello", "Done.", "One more thing"])
        }
    }

    @Test func theTokenWorksForFifteenMinutesThenIsInvalid() async throws {
        let clock = ManualClock()
        try await Harness.withEmulator({
            $0.clock = .init(clock)
            $0.interactionResponseWindow = .seconds(3)
        }) { emulator, http in
            try await http.register(supportCommands)
            let thread = try await http.startThread()
            let (id, token) = try await Self.run(emulator, in: thread)
            let early = try await http.call(.POST, http.webhookPath(token: token), json: ["content": "before"], bot: false)
            #expect(early.status == 404 && early.code == 10015, "a follow-up before any answer")
            #expect(try await http.callback(id, token: token, ["type": 4, "data": ["content": "Hi"]]).status == 204)
            clock.advance(by: .seconds(900))
            #expect(try await http.call(.POST, http.webhookPath(token: token), json: ["content": "in time"], bot: false).status == 200)
            clock.advance(by: .milliseconds(1))
            let late = try await http.call(.POST, http.webhookPath(token: token), json: ["content": "too late"], bot: false)
            #expect(late.status == 401 && late.code == 50027)
            let edit = try await http.call(.PATCH, http.webhookPath(token: token) + "/messages/@original", json: ["content": "x"], bot: false)
            #expect(edit.status == 401 && edit.code == 50027)
            #expect(emulator.interaction(id)?.followups == ["in time"])
        }
    }

    @Test func anAutocompleteResultIsKeptAndOnlyFitsAnAutocompleteInteraction() async throws {
        try await Harness.withEmulator { emulator, http in
            try await http.register(supportCommands)
            let thread = try await http.startThread()
            let tokens = Mutex<[String: String]>([:])
            try await withGateway(http.endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: http.endpoints.botToken)
                _ = try await gateway.dispatch("READY")
                let asked = try emulator.autocomplete("close", inChannel: thread, options: [.string("reason", "so", focused: true)])
                let event = try await gateway.dispatch("INTERACTION_CREATE")
                #expect(event["d"]?["type"] == 4 && asked.type == 4)
                #expect(event["d"]?["data"]?["options"] == [["name": "reason", "type": 3, "value": "so", "focused": true]])
                tokens.withLock { $0[asked.id] = event["d"]?["token"]?.stringValue }
                try await gateway.close(.normalClosure)
            }
            let (id, token) = try #require(tokens.withLock { $0.first })
            let wrongType = try await http.callback(id, token: token, ["type": 4, "data": ["content": "no"]])
            #expect(wrongType.status == 400 && wrongType.code == 50035)
            let choices: JSON = ["type": 8, "data": ["choices": [["name": "Solved", "value": "solved"], ["name": "Sold out", "value": "sold-out"]]]]
            #expect(try await http.callback(id, token: token, choices).status == 204)
            let snapshot = emulator.interaction(id)
            #expect(snapshot?.choices == ["Solved", "Sold out"] && snapshot?.choiceValues == ["solved", "sold-out"])
            #expect(snapshot?.callbackType == 8)

            // A command run takes no choices, nor a component's update.
            let (run, runToken) = try await Self.run(emulator, in: thread)
            #expect(try await http.callback(run, token: runToken, choices).code == 50035)
            #expect(try await http.callback(run, token: runToken, ["type": 7, "data": ["content": "x"]]).code == 50035)
            #expect(emulator.interaction(run)?.acknowledged == false)
        }
    }

    /// Runs `/close` and reads its token back from a gateway session, as an application gets it.
    static func run(_ emulator: DiscordEmulator, in thread: String) async throws -> (id: String, token: String) {
        let endpoints = await emulator.endpoints()
        let found = Mutex<(String, String)?>(nil)
        try await withGateway(endpoints.gatewayURL) { gateway in
            _ = try await gateway.receive()
            try await gateway.identify(token: endpoints.botToken, intents: 0)
            _ = try await gateway.dispatch("READY")
            let run = try emulator.runCommand("close", inChannel: thread, options: [.string("reason", "done")])
            let event = try await gateway.dispatch("INTERACTION_CREATE")
            found.withLock { $0 = (run.id, event["d"]?["token"]?.stringValue ?? "") }
            try await gateway.close(.normalClosure)
        }
        return try #require(found.withLock { $0 })
    }
}
