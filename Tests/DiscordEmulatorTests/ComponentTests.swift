import DiscordEmulator
import DiscordREST
import NIOWebSocket
import Synchronization
import TestSupport
import Testing

@Suite("Discord emulator message components", .timeLimit(.minutes(1)))
struct ComponentTests {
    /// A draft's row: two buttons that send interactions and a link.
    static let draftRows: JSON = [[
        "type": 1,
        "components": [
            ["type": 2, "style": 1, "label": "Send", "custom_id": "send"],
            ["type": 2, "style": 2, "label": "Edit", "custom_id": "edit"],
            ["type": 2, "style": 5, "label": "Help", "url": "https://example.com/help"],
        ],
    ]]

    /// The rows as Discord keeps them: every component numbered, in document order.
    static let storedDraftRows: JSON = [[
        "type": 1, "id": 1,
        "components": [
            ["type": 2, "id": 2, "style": 1, "label": "Send", "custom_id": "send"],
            ["type": 2, "id": 3, "style": 2, "label": "Edit", "custom_id": "edit"],
            ["type": 2, "id": 4, "style": 5, "label": "Help", "url": "https://example.com/help"],
        ],
    ]]

    static let editModal: JSON = [
        "type": 9,
        "data": [
            "custom_id": "edit-modal", "title": "Edit the draft",
            "components": [
                ["type": 1, "components": [["type": 4, "custom_id": "text", "style": 2, "label": "Answer", "value": "Hello", "max_length": 20]]],
                ["type": 18, "label": "Note", "component": ["type": 4, "custom_id": "note", "style": 1, "required": false]],
            ],
        ],
    ]

    @Test func buttonsAreStoredReturnedAndSentInMessageCreate() async throws {
        try await Harness.withEmulator { emulator, http in
            let thread = try await http.startThread()
            try await withGateway(http.endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: http.endpoints.botToken)
                _ = try await gateway.dispatch("GUILD_CREATE")
                let posted = try await Self.post(http, in: thread)
                #expect(posted["components"] == Self.storedDraftRows)
                let created = try await gateway.dispatch("MESSAGE_CREATE")
                #expect(created["d"]?["id"] == posted["id"] && created["d"]?["components"] == Self.storedDraftRows)
                try await gateway.close(.normalClosure)
            }
            let id = try #require(emulator.messages(inThread: thread).last?.id)
            let fetched = try await http.call(.GET, "/channels/\(thread)/messages/\(id)")
            #expect(fetched.json?["components"] == Self.storedDraftRows)
            let buttons = emulator.messages(inThread: thread).last?.buttons ?? []
            #expect(buttons.map(\.customID) == ["send", "edit", nil] && buttons.map(\.style) == [1, 2, 5])
            #expect(buttons.map(\.url) == [nil, nil, "https://example.com/help"] && buttons.allSatisfy { !$0.disabled })

            // Only buttons and no text is a message; ids given are kept and the rest (none, or 0 as
            // libraries send it) skip them.
            let numbered = try await Self.post(
                http, in: thread, content: nil,
                components: [["type": 1, "id": 0, "components": [
                    ["type": 2, "id": 1, "style": 3, "custom_id": "a"], ["type": 2, "id": 0, "style": 4, "custom_id": "b", "disabled": true],
                ]]])
            #expect(numbered["content"] == "" && numbered["components"]?[0]?["id"] == 2)
            #expect(numbered["components"]?[0]?["components"]?[0]?["id"] == 1 && numbered["components"]?[0]?["components"]?[1]?["id"] == 3)
            #expect(emulator.messages(inThread: thread).last?.buttons.map(\.disabled) == [false, true])
        }
    }

    @Test func eachLimitIsRefusedWithTheFieldsPath() async throws {
        func button(_ fields: [String: JSON]) -> JSON {
            .object(["type": 2, "style": 1, "custom_id": "x"].merging(fields) { _, given in given })
        }
        func row(_ buttons: [JSON]) -> JSON { ["type": 1, "components": .array(buttons)] }
        let long = { (count: Int) in JSON.string(String(repeating: "a", count: count)) }
        let cases: [(JSON, [String])] = [
            (.array(Array(repeating: row([button([:])]), count: 6)), ["components"]),
            (.array([row((0..<6).map { button(["custom_id": .string("b\($0)")]) })]), ["components", "0", "components"]),
            (.array([row([])]), ["components", "0", "components"]),
            (.array([row([button(["label": long(81)])])]), ["components", "0", "components", "0", "label"]),
            (.array([row([button(["custom_id": long(101)])])]), ["components", "0", "components", "0", "custom_id"]),
            (.array([row([button(["custom_id": ""])])]), ["components", "0", "components", "0", "custom_id"]),
            (.array([row([["type": 2, "style": 1, "label": "no id"]])]), ["components", "0", "components", "0", "custom_id"]),
            (.array([row([button(["url": "https://example.com"])])]), ["components", "0", "components", "0", "url"]),
            (.array([row([["type": 2, "style": 5, "label": "no url"]])]), ["components", "0", "components", "0", "url"]),
            (.array([row([button(["style": 5, "url": "https://example.com"])])]), ["components", "0", "components", "0", "custom_id"]),
            (.array([row([["type": 2, "style": 5, "url": .string("https://example.com/" + String(repeating: "a", count: 493))]])]),
             ["components", "0", "components", "0", "url"]),
            (.array([row([button(["style": 6])])]), ["components", "0", "components", "0", "style"]),
            (.array([row([button(["style": 0])])]), ["components", "0", "components", "0", "style"]),
            (.array([row([button([:])]), row([button([:])])]), ["components", "1", "components", "0", "custom_id"]),
            (.array([row([button(["id": 7]), button(["id": 7, "custom_id": "y"])])]), ["components", "0", "components", "1", "id"]),
            (.array([["type": 10, "content": "components v2"]]), ["components", "0", "type"]),
            (.array([row([["type": 3, "custom_id": "select", "options": []]])]), ["components", "0", "components", "0", "type"]),
            (.array([row([["type": 4, "custom_id": "input", "style": 1, "label": "In a message"]])]), ["components", "0", "components", "0", "type"]),
            (["type": 1], ["components"]),
        ]
        // Every refusal counts against the channel's bucket, as Discord counts them: room for all of them.
        try await Harness.withEmulator({ $0.messagePostLimit = .init(limit: 100, window: .seconds(5)) }) { emulator, http in
            let thread = try await http.startThread()
            for (components, path) in cases {
                let answer = try await http.call(.POST, "/channels/\(thread)/messages", json: ["content": "x", "components": components])
                #expect(answer.status == 400 && answer.code == 50035, "\(path)")
                #expect(Self.errorCode(answer.json, at: path) != nil, "\(path): \(String(describing: answer.json?["errors"]))")
            }
            let v2 = try await http.call(
                .POST, "/channels/\(thread)/messages", json: ["flags": 32768, "components": [["type": 10, "content": "v2"]]])
            #expect(v2.code == 50035 && Self.errorCode(v2.json, at: ["flags"]) != nil)
            #expect(emulator.messages(inThread: thread).map(\.content) == ["hello"], "nothing was posted")
        }
    }

    @Test func onlyTheApplicationsEnabledButtonsCanBeClickedByWhoCanSeeThem() async throws {
        try await Harness.withEmulator { emulator, http in
            let thread = try await http.startThread()
            let draft = try await Self.post(
                http, in: thread,
                components: [["type": 1, "components": [
                    ["type": 2, "style": 1, "custom_id": "send"], ["type": 2, "style": 2, "custom_id": "off", "disabled": true],
                    ["type": 2, "style": 5, "url": "https://example.com"],
                ]]])
            let id = try #require(draft["id"]?.stringValue)
            let agents = try emulator.replyAsAgent(inThread: thread, content: "An agent's message")
            let stranger = try emulator.addMember(named: "stranger")
            try emulator.setOverwrite(on: http.endpoints.forumChannelID, for: stranger, type: 1, deny: 1 << 10)
            func refusal(_ message: String, _ customID: String, as member: String? = nil) -> DiscordFailure? {
                do {
                    try emulator.clickButton(messageID: message, inChannel: thread, customID: customID, as: member)
                    return nil
                } catch {
                    return error
                }
            }
            #expect(refusal(agents.id, "send")?.status == 400, "not the application's message")
            #expect(refusal(id, "https://example.com")?.status == 400, "a link button sends nothing")
            #expect(refusal(id, "nope")?.status == 400)
            #expect(refusal(id, "off")?.status == 400, "disabled")
            #expect(refusal(id, "send", as: stranger)?.code == 50013, "cannot see the channel")
            #expect(refusal(id, "send", as: "42")?.code == 10007)
            #expect(refusal("1", "send")?.code == 10008)
            #expect(emulator.counters.interactionsCreated == 0)
            #expect(refusal(id, "send") == nil)
            #expect(emulator.counters.interactionsCreated == 1)
        }
    }

    @Test func aClickIsInteractionCreateTypeThreeWithTheMessageAndItsCustomID() async throws {
        try await Harness.withEmulator { emulator, http in
            let thread = try await http.startThread()
            let draft = try await Self.post(http, in: thread)
            let helper = try emulator.addMember(named: "helper", locale: "de")
            try await withGateway(http.endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: http.endpoints.botToken, intents: 0)
                _ = try await gateway.dispatch("READY")
                let click = try emulator.clickButton(messageID: draft["id"]?.stringValue ?? "", inChannel: thread, customID: "send", as: helper)
                let event = try await gateway.dispatch("INTERACTION_CREATE")
                let interaction = try #require(event["d"])
                #expect(interaction["type"] == 3 && interaction["id"]?.stringValue == click.id && interaction["token"]?.stringValue == click.token)
                #expect(interaction["data"] == ["custom_id": "send", "component_type": 2])
                #expect(interaction["message"]?["id"] == draft["id"] && interaction["message"]?["components"] == Self.storedDraftRows)
                #expect(interaction["channel_id"]?.stringValue == thread && interaction["member"]?["user"]?["id"]?.stringValue == helper)
                #expect(interaction["member"]?["permissions"]?.stringValue != nil && interaction["locale"] == "de")
                #expect(interaction["guild_locale"] == "en-US" && interaction["application_id"]?.stringValue == http.endpoints.applicationID)
                #expect(click.type == 3 && click.customID == "send" && click.messageID == draft["id"]?.stringValue && click.commandName.isEmpty)
                try await gateway.close(.normalClosure)
            }
        }
    }

    @Test func aDeferredUpdateLetsEditingTheOriginalEditTheClickedMessage() async throws {
        try await Harness.withEmulator { emulator, http in
            let thread = try await http.startThread()
            let draft = try await Self.post(http, in: thread)
            let id = try #require(draft["id"]?.stringValue)
            let click = try emulator.clickButton(messageID: id, inChannel: thread, customID: "send")
            #expect(try await http.callback(click.id, token: click.token, ["type": 6]).status == 204)
            #expect(emulator.messages(inThread: thread).last?.content == ":ninja: draft", "a deferred update changes nothing yet")
            let edited = try await http.call(
                .PATCH, http.webhookPath(token: click.token) + "/messages/@original", json: ["content": "Sent by Ana", "components": []],
                bot: false)
            #expect(edited.status == 200 && edited.json?["id"]?.stringValue == id && edited.json?["components"] == [])
            let now = try #require(emulator.messages(inThread: thread).last)
            #expect(now.id == id && now.content == "Sent by Ana" && now.buttons.isEmpty)
            let snapshot = emulator.interaction(click.id)
            #expect(snapshot?.callbackType == 6 && snapshot?.updatedContent == "Sent by Ana")
            // One answer per interaction, components too.
            let again = try await http.callback(click.id, token: click.token, ["type": 7, "data": ["content": "again"]])
            #expect(again.status == 400 && again.code == 40060)
        }
    }

    @Test func anUpdateEditsTheClickedMessageAtOnceAndDispatchesMessageUpdate() async throws {
        try await Harness.withEmulator { emulator, http in
            let thread = try await http.startThread()
            let draft = try await Self.post(http, in: thread)
            let id = try #require(draft["id"]?.stringValue)
            try await withGateway(http.endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: http.endpoints.botToken)
                _ = try await gateway.dispatch("GUILD_CREATE")
                let click = try emulator.clickButton(messageID: id, inChannel: thread, customID: "edit")
                let invalid = try await http.callback(
                    click.id, token: click.token, ["type": 7, "data": ["components": [["type": 1, "components": []]]]])
                #expect(invalid.code == 50035 && Self.errorCode(invalid.json, at: ["data", "components", "0", "components"]) != nil)
                let update = try await http.callback(
                    click.id, token: click.token, ["type": 7, "data": ["content": "Discarded", "components": []]], withResponse: true)
                #expect(update.status == 200 && update.json?["resource"]?["type"] == 7)
                #expect(update.json?["resource"]?["message"]?["content"] == "Discarded" && update.json?["resource"]?["message"]?["components"] == [])
                let event = try await gateway.dispatch("MESSAGE_UPDATE")
                #expect(event["d"]?["id"]?.stringValue == id && event["d"]?["content"] == "Discarded" && event["d"]?["components"] == [])
                #expect(emulator.interaction(click.id)?.updatedContent == "Discarded")
                try await gateway.close(.normalClosure)
            }
        }
    }

    @Test func aModalIsKeptAndItsSubmitIsTypeFiveWithTheInputsAsLaidOut() async throws {
        try await Harness.withEmulator { emulator, http in
            let thread = try await http.startThread()
            let draft = try await Self.post(http, in: thread)
            let id = try #require(draft["id"]?.stringValue)
            try await withGateway(http.endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: http.endpoints.botToken, intents: 0)
                _ = try await gateway.dispatch("READY")
                let click = try emulator.clickButton(messageID: id, inChannel: thread, customID: "edit")
                _ = try await gateway.dispatch("INTERACTION_CREATE")
                #expect(try await http.callback(click.id, token: click.token, Self.editModal).status == 204)
                let modal = try #require(emulator.interaction(click.id)?.modal)
                #expect(modal.customID == "edit-modal" && modal.title == "Edit the draft" && !modal.submitted)
                #expect(modal.inputs.map(\.customID) == ["text", "note"] && modal.inputs.map(\.label) == ["Answer", "Note"])
                #expect(modal.inputs.map(\.value) == ["Hello", nil] && modal.inputs.map(\.required) == [true, false])

                let submit = try emulator.submitModal(interactionID: click.id, values: ["text": "Hello there"])
                let event = try await gateway.dispatch("INTERACTION_CREATE")
                let interaction = try #require(event["d"])
                #expect(interaction["type"] == 5 && interaction["id"]?.stringValue == submit.id && submit.id != click.id)
                #expect(
                    interaction["data"] == [
                        "custom_id": "edit-modal",
                        "components": [
                            ["type": 1, "id": 1, "components": [["type": 4, "id": 2, "custom_id": "text", "value": "Hello there"]]],
                            ["type": 18, "id": 3, "component": ["type": 4, "id": 4, "custom_id": "note", "value": ""]],
                        ],
                    ])
                #expect(interaction["message"]?["id"]?.stringValue == id && submit.messageID == id && submit.customID == "edit-modal")
                #expect(emulator.interaction(click.id)?.modal?.submitted == true)
                #expect(throws: DiscordFailure.self) { try emulator.submitModal(interactionID: click.id, values: [:]) }

                // A modal never answers a modal; the click's message can be updated from its submit.
                let modalAgain = try await http.callback(submit.id, token: submit.token, Self.editModal)
                #expect(modalAgain.status == 400 && modalAgain.code == 50035)
                #expect(try await http.callback(submit.id, token: submit.token, ["type": 6]).status == 204)
                let edited = try await http.call(
                    .PATCH, http.webhookPath(token: submit.token) + "/messages/@original", json: ["content": "Hello there"], bot: false)
                #expect(edited.json?["id"]?.stringValue == id && emulator.messages(inThread: thread).last?.content == "Hello there")
                try await gateway.close(.normalClosure)
            }
        }
    }

    @Test func aSubmitOfAModalACommandOpenedTakesNoUpdateAndNamesItsTrigger() async throws {
        try await Harness.withEmulator { emulator, http in
            try await http.register(supportCommands)
            let thread = try await http.startThread()
            let (command, token) = try await InteractionTests.run(emulator, in: thread)
            #expect(try await http.callback(command, token: token, Self.editModal).status == 204)
            let submit = try emulator.submitModal(interactionID: command, values: ["text": "Hi", "note": "n"])
            #expect(submit.messageID == nil)
            for type in [6, 7] {
                let refused = try await http.callback(submit.id, token: submit.token, ["type": JSON(type), "data": ["content": "x"]])
                #expect(refused.status == 400 && refused.code == 50035, "callback \(type)")
            }
            let answer = try await http.callback(submit.id, token: submit.token, ["type": 4, "data": ["content": "Saved."]], withResponse: true)
            let metadata = try #require(answer.json?["resource"]?["message"]?["interaction_metadata"])
            #expect(metadata["type"] == 5 && metadata["triggering_interaction_metadata"]?["id"]?.stringValue == command)
            #expect(metadata["triggering_interaction_metadata"]?["type"] == 2)
            #expect(answer.json?["resource"]?["message"]?["type"] == 0)
        }
    }

    @Test func aSubmitTheMembersClientWouldNotSendIsRefused() async throws {
        try await Harness.withEmulator { emulator, http in
            let thread = try await http.startThread()
            let draft = try await Self.post(http, in: thread)
            let click = try emulator.clickButton(messageID: draft["id"]?.stringValue ?? "", inChannel: thread, customID: "edit")
            #expect(throws: DiscordFailure.self, "no modal yet") { try emulator.submitModal(interactionID: click.id, values: [:]) }
            #expect(try await http.callback(click.id, token: click.token, Self.editModal).status == 204)
            let other = try emulator.addMember(named: "other")
            func refusal(_ values: [String: String], as member: String? = nil) -> DiscordFailure? {
                do {
                    try emulator.submitModal(interactionID: click.id, values: values, as: member)
                    return nil
                } catch {
                    return error
                }
            }
            #expect(refusal(["text": ""])?.code == 50035, "required")
            #expect(refusal(["text": String(repeating: "a", count: 21)])?.code == 50035, "past max_length")
            #expect(refusal(["nope": "x"])?.code == 50035, "no such input")
            #expect(refusal(["text": "Hi"], as: other)?.code == 50013, "only the member it was shown to")
            #expect(emulator.counters.interactionsCreated == 1)
            #expect(refusal([:]) == nil, "the prefilled value is sent as it is")
        }
    }

    @Test func aCallbackToAClickPastThreeSecondsIsAnUnknownInteraction() async throws {
        let clock = ManualClock()
        try await Harness.withEmulator({
            $0.clock = .init(clock)
            $0.interactionResponseWindow = .seconds(3)
        }) { emulator, http in
            let thread = try await http.startThread()
            let draft = try await Self.post(http, in: thread)
            let id = try #require(draft["id"]?.stringValue)
            let onTime = try emulator.clickButton(messageID: id, inChannel: thread, customID: "send")
            clock.advance(by: .seconds(3))
            #expect(try await http.callback(onTime.id, token: onTime.token, ["type": 6]).status == 204)
            let late = try emulator.clickButton(messageID: id, inChannel: thread, customID: "send")
            clock.advance(by: .milliseconds(3_001))
            let answer = try await http.callback(late.id, token: late.token, ["type": 7, "data": ["content": "too late"]])
            #expect(answer.status == 404 && answer.code == 10062)
            #expect(emulator.interaction(late.id)?.acknowledged == false && emulator.messages(inThread: thread).last?.content == ":ninja: draft")
        }
    }

    @Test func followUpsToAClickNameItsMessageAndEphemeralOnesStayOffTheChannel() async throws {
        try await Harness.withEmulator { emulator, http in
            let thread = try await http.startThread()
            let draft = try await Self.post(http, in: thread)
            let id = try #require(draft["id"]?.stringValue)
            let click = try emulator.clickButton(messageID: id, inChannel: thread, customID: "send")
            let early = try await http.call(.POST, http.webhookPath(token: click.token), json: ["content": "before"], bot: false)
            #expect(early.code == 10015, "a follow-up before any answer")
            #expect(try await http.callback(click.id, token: click.token, ["type": 6]).status == 204)
            let secret = try await http.call(.POST, http.webhookPath(token: click.token), json: ["content": "Already sent", "flags": 64], bot: false)
            #expect(secret.status == 200 && secret.json?["flags"] == 64)
            let loud = try await http.call(.POST, http.webhookPath(token: click.token), json: ["content": "Sent."], bot: false)
            #expect(loud.status == 200 && loud.json?["type"] == 0)
            #expect(loud.json?["interaction_metadata"]?["type"] == 3 && loud.json?["interaction_metadata"]?["interacted_message_id"]?.stringValue == id)
            #expect(emulator.messages(inThread: thread).map(\.content) == ["hello", ":ninja: draft", "Sent."])
            #expect(emulator.interaction(click.id)?.followups == ["Already sent", "Sent."])

            // After a modal there is no message to follow.
            let edit = try emulator.clickButton(messageID: id, inChannel: thread, customID: "edit")
            #expect(try await http.callback(edit.id, token: edit.token, Self.editModal).status == 204)
            #expect(try await http.call(.POST, http.webhookPath(token: edit.token), json: ["content": "x"], bot: false).code == 10015)
        }
    }

    @Test func redeliveringSendsTheIdenticalPayloadAgain() async throws {
        try await Harness.withEmulator { emulator, http in
            let thread = try await http.startThread()
            let draft = try await Self.post(http, in: thread)
            let payloads = Mutex<[JSON]>([])
            try await withGateway(http.endpoints.gatewayURL) { gateway in
                _ = try await gateway.receive()
                try await gateway.identify(token: http.endpoints.botToken, intents: 0)
                _ = try await gateway.dispatch("READY")
                let click = try emulator.clickButton(messageID: draft["id"]?.stringValue ?? "", inChannel: thread, customID: "send")
                let first = try await gateway.dispatch("INTERACTION_CREATE")
                try emulator.redeliver(interactionID: click.id)
                let second = try await gateway.dispatch("INTERACTION_CREATE")
                payloads.withLock { $0 = [first["d"] ?? .null, second["d"] ?? .null] }
                try await gateway.close(.normalClosure)
            }
            let (first, second) = try #require(payloads.withLock { $0.count == 2 ? ($0[0], $0[1]) : nil })
            #expect(first == second && first["type"] == 3)
            #expect(emulator.counters.interactionsCreated == 1)
            #expect(throws: DiscordFailure.self) { try emulator.redeliver(interactionID: "1") }
        }
    }

    @Test func editingAMessageChangesItsButtonsAndNeverLeavesItEmpty() async throws {
        try await Harness.withEmulator { emulator, http in
            let thread = try await http.startThread()
            let draft = try await Self.post(http, in: thread)
            let path = "/channels/\(thread)/messages/\(draft["id"]?.stringValue ?? "")"
            let removed = try await http.call(.PATCH, path, json: ["components": [], "allowed_mentions": ["parse": []]])
            #expect(removed.status == 200 && removed.json?["components"] == [] && removed.json?["content"] == ":ninja: draft")
            let restored = try await http.call(.PATCH, path, json: ["components": Self.draftRows])
            #expect(restored.json?["components"] == Self.storedDraftRows && emulator.messages(inThread: thread).last?.buttons.count == 3)
            let invalid = try await http.call(.PATCH, path, json: ["components": [["type": 1, "components": [["type": 2, "style": 1]]]]])
            #expect(invalid.code == 50035 && Self.errorCode(invalid.json, at: ["components", "0", "components", "0", "custom_id"]) != nil)
            #expect(try await http.call(.PATCH, path, json: [:]).code == 50035, "nothing to change")

            let onlyButtons = try await Self.post(http, in: thread, content: nil)
            let emptied = try await http.call(.PATCH, "/channels/\(thread)/messages/\(onlyButtons["id"]?.stringValue ?? "")", json: ["components": []])
            #expect(emptied.status == 400 && emptied.code == 50006)
        }
    }

    // MARK: Helpers

    /// The bot posts a message with `components` (the draft's row unless told otherwise).
    static func post(_ http: RawHTTP, in thread: String, content: String? = ":ninja: draft", components: JSON = draftRows) async throws -> JSON {
        var body: [String: JSON] = ["components": components]
        if let content { body["content"] = .string(content) }
        let answer = try await http.call(.POST, "/channels/\(thread)/messages", json: .object(body))
        try #require(answer.status == 200, "\(String(describing: answer.json))")
        return try #require(answer.json)
    }

    /// The first code of the form error at `path` (Discord's `errors` tree), if there is one.
    static func errorCode(_ json: JSON?, at path: [String]) -> String? {
        var node = json?["errors"]
        for key in path { node = node?[key] }
        return node?["_errors"]?[0]?["code"]?.stringValue
    }
}
