import DiscordEmulator
import DiscordGateway
import DiscordREST
import Foundation
import Logging
import Testing

/// A slash command run, a button clicked or a modal submitted in Discord reaches the server as an
/// event of its own, from the gateway's payload and across the daemon → server contract.
@Suite("Interaction events")
struct InteractionEventTests {
    /// INTERACTION_CREATE as Discord documents it (a subcommand with a string option).
    static let payload: JSON = [
        "id": "1200000000000000001", "application_id": "1100000000000000001", "type": 2, "token": "aW50ZXJhY3Rpb24tdG9rZW4", "version": 1,
        "guild_id": "1000000000000000001", "channel_id": "1300000000000000001",
        "member": [
            "user": ["id": "1400000000000000001", "username": "ana", "global_name": "Ana", "discriminator": "0"],
            "roles": ["1500000000000000001"], "permissions": "17179869184", "nick": nil,
        ],
        "data": [
            "id": "1600000000000000001", "name": "snippets", "type": 1,
            "options": [["name": "add", "type": 1, "options": [["name": "name", "type": 3, "value": "hi"], ["name": "n", "type": 4, "value": 3]]]],
        ],
    ]

    @Test func aCommandBecomesAnEventAndCrossesToTheServerIntact() async throws {
        let filter = ForumEventFilter(forumID: "1", discord: nil)
        let events = await filter.events(for: "INTERACTION_CREATE", data: Self.payload)
        guard case .interaction(let interaction)? = events.first, events.count == 1 else {
            Issue.record("no interaction event: \(events)")
            return
        }
        #expect(interaction.member?.displayName == "Ana" && interaction.member?.roles == ["1500000000000000001"])
        let add = try #require(interaction.data?.options?.first)
        #expect(add.name == "add" && add.options?.map(\.text) == ["hi", "3"])
        // The token answers the interaction: it never shows in a description (logs).
        #expect(!"\(interaction)".contains(interaction.token))
        let wire = try JSONEncoder().encode(ForumEventBatch(events: events))
        let back = try JSONDecoder().decode(ForumEventBatch.self, from: wire)
        #expect(back.events == events && back.skipped == 0)
    }

    /// A click on a button of the bot's message, as Discord sends it (the message abridged).
    static let click: JSON = [
        "id": "1200000000000000002", "application_id": "1100000000000000001", "type": 3, "token": "Y2xpY2stdG9rZW4", "version": 1,
        "guild_id": "1000000000000000001", "channel_id": "1300000000000000001", "locale": "de", "guild_locale": "en-US",
        "member": ["user": ["id": "1400000000000000001", "username": "ana", "discriminator": "0"], "roles": [], "permissions": "1024"],
        "message": [
            "id": "1700000000000000001", "channel_id": "1300000000000000001", "content": ":ninja: draft", "type": 0,
            "components": [["type": 1, "id": 1, "components": [["type": 2, "id": 2, "style": 1, "label": "Send", "custom_id": "draft:send:9"]]]],
        ],
        "data": ["custom_id": "draft:send:9", "component_type": 2],
    ]

    /// The submit of a modal opened from that button: one input in an action row, one in a label.
    static let submit: JSON = [
        "id": "1200000000000000003", "application_id": "1100000000000000001", "type": 5, "token": "c3VibWl0LXRva2Vu", "version": 1,
        "guild_id": "1000000000000000001", "channel_id": "1300000000000000001", "locale": "en-GB",
        "member": ["user": ["id": "1400000000000000001", "username": "ana", "discriminator": "0"], "roles": [], "permissions": "1024"],
        "message": ["id": "1700000000000000001", "channel_id": "1300000000000000001", "content": ":ninja: draft", "type": 0],
        "data": [
            "custom_id": "draft:edit:9",
            "components": [
                ["type": 1, "id": 1, "components": [["type": 4, "id": 2, "custom_id": "text", "value": "Hello there"]]],
                ["type": 18, "id": 3, "component": ["type": 4, "id": 4, "custom_id": "note", "value": ""]],
            ],
        ],
    ]

    @Test func aClickAndASubmitAreForwardedAndCrossToTheServerIntact() async throws {
        let filter = ForumEventFilter(forumID: "1", discord: nil)
        let clicked = await filter.events(for: "INTERACTION_CREATE", data: Self.click)
        let submitted = await filter.events(for: "INTERACTION_CREATE", data: Self.submit)
        guard case .interaction(let click)? = clicked.first, case .interaction(let submit)? = submitted.first else {
            Issue.record("not forwarded: \(clicked) \(submitted)")
            return
        }
        #expect(click.type == DiscordInteraction.component && click.data == nil && click.modal == nil)
        #expect(click.component == DiscordInteraction.ComponentData(customId: "draft:send:9", componentType: 2))
        #expect(click.message == DiscordInteraction.MessageRef(id: "1700000000000000001", channelId: "1300000000000000001"))
        #expect(click.locale == "de" && click.guildLocale == "en-US")
        #expect(submit.type == DiscordInteraction.modalSubmit && submit.component == nil && submit.data == nil)
        #expect(submit.modal == DiscordInteraction.ModalSubmitData(customId: "draft:edit:9", fields: ["text": "Hello there", "note": ""]))
        #expect(submit.message?.id == "1700000000000000001" && submit.locale == "en-GB")
        #expect(!"\(click)".contains(click.token) && "\(click)".contains("draft:send:9"))
        let wire = try JSONEncoder().encode(ForumEventBatch(events: clicked + submitted))
        let back = try JSONDecoder().decode(ForumEventBatch.self, from: wire)
        #expect(back.events == clicked + submitted && back.skipped == 0)
    }

    @Test func theEmulatorsInteractionsOfEveryTypeDecodeAndCrossToTheServer() async throws {
        let logger = {
            var logger = Logger(label: "interaction-events")
            logger.logLevel = .error
            return logger
        }()
        var configuration = DiscordEmulator.Configuration()
        // A loaded machine must not make the modal late: the 3 s are tested in the emulator's suite.
        configuration.interactionResponseWindow = .seconds(600)
        try await DiscordEmulator.withRunning(configuration: configuration, logger: logger) { emulator in
            let endpoints = await emulator.endpoints()
            let client = DiscordClient(configuration: .init(baseURL: endpoints.restURL, token: endpoints.botToken), logger: logger)
            try await client.overwriteGuildCommands(
                applicationID: endpoints.applicationID, guildID: endpoints.guildID,
                [DiscordApplicationCommand(
                    name: "snippet", description: "Send a snippet",
                    options: [.init(.string, name: "name", description: "Which", required: true, autocomplete: true)])])
            let thread = try await client.startForumThread(
                in: endpoints.forumChannelID, DiscordForumThreadCreate(name: "t", message: DiscordMessageCreate(content: "hello"))).channel.id
            let rows = [try DiscordActionRow([try DiscordButton(.primary, label: "Edit", customId: "draft:edit:1")])]
            let note = try await client.createMessage(in: thread, DiscordMessageCreate(content: ":ninja: draft", components: rows))
            let command = try emulator.runCommand("snippet", inChannel: thread, options: [.string("name", "hi")])
            let click = try emulator.clickButton(messageID: note.id, inChannel: thread, customID: "draft:edit:1")
            let typing = try emulator.autocomplete("snippet", inChannel: thread, options: [.string("name", "h", focused: true)])
            let modal = try DiscordModal(
                customId: "draft:edit:1", title: "Edit the draft",
                inputs: [try DiscordTextInput(customId: "text", label: "Answer", style: .paragraph, value: "Hi")])
            try await client.respond(to: click.id, token: click.token, .modal(modal))
            let submit = try emulator.submitModal(interactionID: click.id, values: ["text": "Hello"])

            let filter = ForumEventFilter(forumID: endpoints.forumChannelID, discord: nil)
            var events: [ForumEvent] = []
            for id in [command.id, click.id, typing.id, submit.id] {
                events += await filter.events(for: "INTERACTION_CREATE", data: try #require(emulator.interactionPayload(id)))
            }
            let interactions = events.compactMap { event -> DiscordInteraction? in
                if case .interaction(let interaction) = event { return interaction }
                return nil
            }
            try #require(interactions.map(\.type) == [2, 3, 4, 5])
            #expect(interactions[0].data?.name == "snippet" && interactions[0].data?.options?.first?.text == "hi")
            #expect(interactions[1].component?.customId == "draft:edit:1" && interactions[1].message?.id == note.id)
            #expect(interactions[1].locale == "en-US" && interactions[1].data == nil)
            #expect(interactions[2].data?.options?.first?.focused == true)
            #expect(interactions[3].modal == DiscordInteraction.ModalSubmitData(customId: "draft:edit:1", fields: ["text": "Hello"]))
            #expect(interactions[3].message == DiscordInteraction.MessageRef(id: note.id, channelId: thread))
            let back = try JSONDecoder().decode(ForumEventBatch.self, from: JSONEncoder().encode(ForumEventBatch(events: events)))
            #expect(back.events == events && back.skipped == 0)
        }
    }

    @Test func aPingAndShapelessInteractionsAreNotForwarded() async {
        let filter = ForumEventFilter(forumID: "1", discord: nil)
        guard case .object(var ping) = Self.payload else { return }
        ping["type"] = 1
        ping["data"] = nil
        #expect(await filter.events(for: "INTERACTION_CREATE", data: .object(ping)).isEmpty)
        #expect(await filter.events(for: "INTERACTION_CREATE", data: ["type": 2]).isEmpty)
        // A click whose data is not a component's is dropped, not passed on half-read.
        guard case .object(var click) = Self.click else { return }
        click["data"] = ["name": "x"]
        #expect(await filter.events(for: "INTERACTION_CREATE", data: .object(click)).isEmpty)
    }
}

/// The stock libraries send snowflakes as JSON numbers: those beyond 2^53 must survive parsing.
@Suite("JSON numbers")
struct JSONNumberTests {
    @Test func aSnowflakeSentAsANumberIsReadExactly() throws {
        let parsed = try JSON.parse(Data(#"{"id": 1234567890123456789, "small": 42, "half": 0.5, "huge": 1e300}"#.utf8))
        #expect(parsed["id"]?.intValue == 1_234_567_890_123_456_789)
        #expect(parsed["id"] == .integer(1_234_567_890_123_456_789))
        #expect(parsed["small"] == .number(42) && parsed["half"] == .number(0.5) && parsed["huge"]?.doubleValue == 1e300)
        #expect(try JSON.parse(Data("9007199254740993".utf8)) == .integer(9_007_199_254_740_993))
        // A float's shortest spelling is not an integer's: what the Double held survives a round trip.
        let float = try JSON.parse(Data("777777777777777777.7".utf8))
        #expect(try JSON.parse(float.encoded()) == float)
        // And written back as it came.
        let written = String(decoding: parsed.encoded(), as: UTF8.self)
        #expect(written.contains(#""id":1234567890123456789"#))
    }
}
