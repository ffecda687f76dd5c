import DiscordREST
import Foundation
import Testing

/// Buttons, modals and the answers that carry them, as Discord's schema spells them
/// (`ButtonComponentForMessageRequest`, `ModalInteractionCallbackRequest`,
/// `UpdateMessageInteractionCallbackRequest`, `MessageEditRequestPartial`).
@Suite("Discord components")
struct DiscordComponentTests {
    static func encoded(_ value: some Encodable) throws -> JSON {
        try JSON.parse(JSONEncoder().encode(value))
    }

    static func draftRow() throws -> DiscordActionRow {
        try DiscordActionRow([
            try DiscordButton(.success, label: "Send", customId: "draft:send:1"),
            try DiscordButton(.secondary, label: "Edit", customId: "draft:edit:1"),
            try DiscordButton(.danger, label: "Discard", customId: "draft:discard:1", disabled: true),
            try DiscordButton(linkTo: "https://example.com/faq", label: "FAQ"),
        ])
    }

    @Test func aMessageCarriesItsRowsOnlyWhenItHasSome() throws {
        let plain = try Self.encoded(DiscordMessageCreate(content: "hi"))
        #expect(plain.objectValue?.keys.contains("components") == false)
        let note = try Self.encoded(DiscordMessageCreate(content: ":ninja: draft", components: [try Self.draftRow()]))
        #expect(
            note["components"] == [[
                "type": 1,
                "components": [
                    ["type": 2, "style": 3, "label": "Send", "custom_id": "draft:send:1"],
                    ["type": 2, "style": 2, "label": "Edit", "custom_id": "draft:edit:1"],
                    ["type": 2, "style": 4, "label": "Discard", "custom_id": "draft:discard:1", "disabled": true],
                    ["type": 2, "style": 5, "label": "FAQ", "url": "https://example.com/faq"],
                ],
            ]])
        #expect(note["allowed_mentions"] == ["parse": []])
    }

    @Test func anEditSaysOnlyWhatChanges() throws {
        #expect(try Self.encoded(DiscordMessageEdit(content: "new")) == ["content": "new", "allowed_mentions": ["parse": []]])
        #expect(try Self.encoded(DiscordMessageEdit(components: [])) == ["components": [], "allowed_mentions": ["parse": []]])
        let both = try Self.encoded(DiscordMessageEdit(content: "Sent", components: [try Self.draftRow()]))
        #expect(both["content"] == "Sent" && both["components"]?[0]?["components"]?.arrayValue?.count == 4)
    }

    @Test func theAnswersToAClickEncodeAsDiscordsCallbacks() throws {
        #expect(try Self.encoded(DiscordInteractionResponse.deferredUpdate) == ["type": 6])
        #expect(
            try Self.encoded(DiscordInteractionResponse.update(content: "Discarded", components: []))
                == ["type": 7, "data": ["content": "Discarded", "components": [], "allowed_mentions": ["parse": []]]])
        let modal = try DiscordModal(
            customId: "draft:edit:1", title: "Edit the draft",
            inputs: [
                try DiscordTextInput(customId: "text", label: "Answer", style: .paragraph, value: "Hello", maxLength: 1500),
                try DiscordTextInput(customId: "why", label: "Why", style: .short, required: false, placeholder: "optional"),
            ])
        #expect(
            try Self.encoded(DiscordInteractionResponse.modal(modal)) == [
                "type": 9,
                "data": [
                    "custom_id": "draft:edit:1", "title": "Edit the draft",
                    "components": [
                        ["type": 1, "components": [["type": 4, "custom_id": "text", "label": "Answer", "style": 2, "value": "Hello", "max_length": 1500]]],
                        ["type": 1, "components": [["type": 4, "custom_id": "why", "label": "Why", "style": 1, "required": false, "placeholder": "optional"]]],
                    ],
                ],
            ])
        // What was there before still encodes as it did.
        #expect(try Self.encoded(DiscordInteractionResponse.deferredEphemeral) == ["type": 5, "data": ["flags": 64]])
    }

    @Test func whatDiscordWouldRefuseCannotBeBuilt() throws {
        let long = { (count: Int) in String(repeating: "a", count: count) }
        let button = try DiscordButton(.primary, label: "A", customId: "a")
        func fails(_ field: String, _ build: () throws -> Void) {
            do {
                try build()
                Issue.record("built: \(field)")
            } catch let error as DiscordComponentError {
                #expect(error.field == field, "\(error)")
            } catch {
                Issue.record("\(field): \(error)")
            }
        }
        fails("label") { _ = try DiscordButton(.primary, label: long(81), customId: "x") }
        fails("custom_id") { _ = try DiscordButton(.primary, label: nil, customId: long(101)) }
        fails("custom_id") { _ = try DiscordButton(.primary, label: "x", customId: "") }
        fails("style") { _ = try DiscordButton(.link, label: "x", customId: "x") }
        fails("url") { _ = try DiscordButton(linkTo: "https://example.com/" + long(493), label: "x") }
        fails("components") { _ = try DiscordActionRow([]) }
        fails("components") { _ = try DiscordActionRow(Array(repeating: button, count: 6)) }
        fails("components") { _ = try DiscordActionRow([button, button]) }
        fails("components") { _ = try DiscordActionRow.checked(Array(repeating: try DiscordActionRow([button]), count: 2)) }
        fails("components") {
            _ = try DiscordActionRow.checked(
                (0..<6).map { (index) throws(DiscordComponentError) in try DiscordActionRow([try DiscordButton(.primary, label: nil, customId: "\(index)")]) })
        }
        fails("label") { _ = try DiscordTextInput(customId: "t", label: long(46), style: .short) }
        fails("value") { _ = try DiscordTextInput(customId: "t", label: "T", style: .short, value: long(4001)) }
        fails("max_length") { _ = try DiscordTextInput(customId: "t", label: "T", style: .short, maxLength: 0) }
        fails("min_length") { _ = try DiscordTextInput(customId: "t", label: "T", style: .short, minLength: 10, maxLength: 5) }
        fails("placeholder") { _ = try DiscordTextInput(customId: "t", label: "T", style: .short, placeholder: long(101)) }
        let input = try DiscordTextInput(customId: "t", label: "T", style: .short)
        fails("title") { _ = try DiscordModal(customId: "m", title: long(46), inputs: [input]) }
        fails("title") { _ = try DiscordModal(customId: "m", title: "", inputs: [input]) }
        fails("components") { _ = try DiscordModal(customId: "m", title: "M", inputs: []) }
        fails("components") { _ = try DiscordModal(customId: "m", title: "M", inputs: Array(repeating: input, count: 2)) }
        // The limits themselves are allowed.
        _ = try DiscordButton(.primary, label: long(80), customId: long(100))
        _ = try DiscordModal(customId: long(100), title: long(45), inputs: [try DiscordTextInput(customId: "t", label: long(45), style: .paragraph, value: long(4000))])
    }

    @Test func anInteractionKeepsItsMemberwiseInitialiserAndDescribesItselfWithoutItsToken() throws {
        let user = try JSONDecoder().decode(DiscordUser.self, from: Data(#"{"id":"1","username":"ana"}"#.utf8))
        let member = DiscordInteraction.Member(user: user)
        let command = DiscordInteraction(
            id: "9", applicationId: "8", type: DiscordInteraction.command, token: "secret-token", guildId: "7", channelId: "6",
            member: member, data: .init(id: "5", name: "close"))
        #expect(command.component == nil && command.modal == nil && command.message == nil && command.locale == nil)
        let click = DiscordInteraction(
            id: "10", applicationId: "8", type: DiscordInteraction.component, token: "secret-token", guildId: "7", channelId: "6",
            member: member, data: nil, component: .init(customId: "draft:send:1"), message: .init(id: "4", channelId: "6"), locale: "fr")
        #expect("\(command)".contains("close") && "\(click)".contains("draft:send:1"))
        #expect(!"\(command)".contains("secret-token") && !"\(click)".contains("secret-token"))
    }
}
