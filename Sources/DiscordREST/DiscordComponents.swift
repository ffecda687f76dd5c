/// Legacy message components (action rows of buttons) and modals of text inputs, built only
/// within Discord's limits: a value Discord would refuse (50035) cannot be made. Lengths count
/// UTF-16 units, never fewer than the characters Discord counts.
public struct DiscordComponentError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The field, as Discord's error would name it (`components.0.components.1.custom_id`).
    public var field: String
    public var reason: String

    public var description: String { "\(field): \(reason)" }

    static func check(_ condition: Bool, _ field: String, _ reason: String) throws(DiscordComponentError) {
        if !condition { throw DiscordComponentError(field: field, reason: reason) }
    }
}

/// A button (component type 2). Every style but `.link` sends an interaction carrying `customId`.
public struct DiscordButton: Sendable, Hashable, Encodable {
    public enum Style: Int, Sendable, Hashable, Encodable {
        case primary = 1, secondary = 2, success = 3, danger = 4, link = 5
    }

    public static let maxLabel = 80
    public static let maxCustomID = 100
    public static let maxURL = 512

    public let style: Style
    public let label: String?
    public let customId: String?
    public let url: String?
    public let disabled: Bool

    /// A button that sends an interaction: `customId` of 1–100 characters, `label` at most 80.
    public init(_ style: Style, label: String?, customId: String, disabled: Bool = false) throws(DiscordComponentError) {
        try DiscordComponentError.check(style != .link, "style", "a link button takes a url, not a custom_id")
        try DiscordComponentError.check((1...Self.maxCustomID).contains(customId.utf16.count), "custom_id", "must be 1–\(Self.maxCustomID) characters")
        try DiscordComponentError.check((label?.utf16.count ?? 0) <= Self.maxLabel, "label", "must be at most \(Self.maxLabel) characters")
        (self.style, self.label, self.customId, self.url, self.disabled) = (style, label, customId, nil, disabled)
    }

    /// A link button: opens `url` (at most 512 characters) and sends no interaction.
    public init(linkTo url: String, label: String?, disabled: Bool = false) throws(DiscordComponentError) {
        try DiscordComponentError.check((1...Self.maxURL).contains(url.utf16.count), "url", "must be 1–\(Self.maxURL) characters")
        try DiscordComponentError.check((label?.utf16.count ?? 0) <= Self.maxLabel, "label", "must be at most \(Self.maxLabel) characters")
        (self.style, self.label, self.customId, self.url, self.disabled) = (.link, label, nil, url, disabled)
    }

    private enum CodingKeys: String, CodingKey { case type, style, label, customId = "custom_id", url, disabled }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(2, forKey: .type)
        try container.encode(style, forKey: .style)
        try container.encodeIfPresent(label, forKey: .label)
        try container.encodeIfPresent(customId, forKey: .customId)
        try container.encodeIfPresent(url, forKey: .url)
        if disabled { try container.encode(true, forKey: .disabled) }
    }
}

/// A row of 1–5 buttons under a message (component type 1).
public struct DiscordActionRow: Sendable, Hashable, Encodable {
    public static let maxButtons = 5
    /// A message without the components-v2 flag holds at most 5 rows.
    public static let maxRows = 5

    public let components: [DiscordButton]

    public init(_ buttons: [DiscordButton]) throws(DiscordComponentError) {
        try DiscordComponentError.check((1...Self.maxButtons).contains(buttons.count), "components", "a row holds 1–\(Self.maxButtons) buttons")
        try Self.checkUnique(buttons.compactMap(\.customId), field: "components")
        components = buttons
    }

    /// Checks what Discord checks across a message's rows: at most 5, and no `custom_id` twice.
    public static func checked(_ rows: [DiscordActionRow]) throws(DiscordComponentError) -> [DiscordActionRow] {
        try DiscordComponentError.check(rows.count <= maxRows, "components", "a message holds at most \(maxRows) rows")
        try checkUnique(rows.flatMap { $0.components.compactMap(\.customId) }, field: "components")
        return rows
    }

    static func checkUnique(_ ids: [String], field: String) throws(DiscordComponentError) {
        try DiscordComponentError.check(Set(ids).count == ids.count, field, "custom_id values must be unique")
    }

    private enum CodingKeys: String, CodingKey { case type, components }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(1, forKey: .type)
        try container.encode(components, forKey: .components)
    }
}

/// A text field of a modal (component type 4).
public struct DiscordTextInput: Sendable, Hashable, Encodable {
    public enum Style: Int, Sendable, Hashable, Encodable {
        case short = 1, paragraph = 2
    }

    public static let maxLabel = 45
    public static let maxValue = 4000
    public static let maxPlaceholder = 100

    public let customId: String
    public let label: String
    public let style: Style
    public let value: String?
    public let minLength: Int?
    public let maxLength: Int?
    public let required: Bool?
    public let placeholder: String?

    public init(
        customId: String, label: String, style: Style, value: String? = nil, minLength: Int? = nil, maxLength: Int? = nil,
        required: Bool? = nil, placeholder: String? = nil
    ) throws(DiscordComponentError) {
        try DiscordComponentError.check((1...DiscordButton.maxCustomID).contains(customId.utf16.count), "custom_id", "must be 1–100 characters")
        try DiscordComponentError.check((1...Self.maxLabel).contains(label.utf16.count), "label", "must be 1–\(Self.maxLabel) characters")
        try DiscordComponentError.check((value?.utf16.count ?? 0) <= Self.maxValue, "value", "must be at most \(Self.maxValue) characters")
        try DiscordComponentError.check(minLength.map { (0...Self.maxValue).contains($0) } ?? true, "min_length", "must be 0–4000")
        try DiscordComponentError.check(maxLength.map { (1...Self.maxValue).contains($0) } ?? true, "max_length", "must be 1–4000")
        try DiscordComponentError.check((minLength ?? 0) <= (maxLength ?? Self.maxValue), "min_length", "must not exceed max_length")
        try DiscordComponentError.check((placeholder?.utf16.count ?? 0) <= Self.maxPlaceholder, "placeholder", "must be at most 100 characters")
        (self.customId, self.label, self.style, self.value) = (customId, label, style, value)
        (self.minLength, self.maxLength, self.required, self.placeholder) = (minLength, maxLength, required, placeholder)
    }

    private enum CodingKeys: String, CodingKey {
        case type, customId = "custom_id", label, style, value, minLength = "min_length", maxLength = "max_length", required, placeholder
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(4, forKey: .type)
        try container.encode(customId, forKey: .customId)
        try container.encode(label, forKey: .label)
        try container.encode(style, forKey: .style)
        try container.encodeIfPresent(value, forKey: .value)
        try container.encodeIfPresent(minLength, forKey: .minLength)
        try container.encodeIfPresent(maxLength, forKey: .maxLength)
        try container.encodeIfPresent(required, forKey: .required)
        try container.encodeIfPresent(placeholder, forKey: .placeholder)
    }
}

/// A form Discord shows the member (callback type 9): a title and 1–5 text inputs, each in an
/// action row of its own. Its submit comes back as an interaction of type 5.
public struct DiscordModal: Sendable, Hashable, Encodable {
    public static let maxTitle = 45
    public static let maxInputs = 5

    public let customId: String
    public let title: String
    public let inputs: [DiscordTextInput]

    public init(customId: String, title: String, inputs: [DiscordTextInput]) throws(DiscordComponentError) {
        try DiscordComponentError.check((1...DiscordButton.maxCustomID).contains(customId.utf16.count), "custom_id", "must be 1–100 characters")
        try DiscordComponentError.check((1...Self.maxTitle).contains(title.utf16.count), "title", "must be 1–\(Self.maxTitle) characters")
        try DiscordComponentError.check((1...Self.maxInputs).contains(inputs.count), "components", "a modal holds 1–\(Self.maxInputs) inputs")
        try DiscordActionRow.checkUnique(inputs.map(\.customId), field: "components")
        (self.customId, self.title, self.inputs) = (customId, title, inputs)
    }

    private struct Row: Encodable {
        let type = 1
        let components: [DiscordTextInput]
    }

    private enum CodingKeys: String, CodingKey { case customId = "custom_id", title, components }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(customId, forKey: .customId)
        try container.encode(title, forKey: .title)
        try container.encode(inputs.map { Row(components: [$0]) }, forKey: .components)
    }
}
