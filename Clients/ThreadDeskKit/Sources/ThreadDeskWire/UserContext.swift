/// One value the app says about its user (`PUT /v1/attributes`, an activity's properties): text
/// (at most 256 characters), a whole number, a number, yes or no, or a date. On the wire a JSON
/// string, number or boolean; a date is an object `{"date": "2026-12-07T10:00:00Z"}` (ISO 8601
/// with a time zone), so that a text that looks like a date stays a text.
public enum AttributeValue: Sendable, Hashable, Codable {
    case string(String)
    case integer(Int)
    case number(Double)
    case bool(Bool)
    /// ISO 8601, with a time zone (`Z` or an offset).
    case date(String)

    private struct DateBox: Codable, Hashable { var date: String }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let box = try? container.decode(DateBox.self) {
            self = .date(box.date)
        } else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "expected a string, a number, a boolean or {\"date\": \"…\"}")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .date(let value): try container.encode(DateBox(date: value))
        }
    }

    /// The longest text value, in characters.
    public static let textLimit = 256
}

/// The JSON body of `PUT /v1/attributes`: merged into what the server keeps; a key whose value
/// is `null` is removed. Keys are 1–40 of `a-z 0-9 _`; a user holds at most 50.
public struct AttributesUpdate: Sendable, Codable, Hashable {
    /// nil removes the key.
    public var attributes: [String: AttributeValue?]

    public init(attributes: [String: AttributeValue?]) {
        self.attributes = attributes
    }

    private enum CodingKeys: String, CodingKey { case attributes }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let object = try container.nestedContainer(keyedBy: AnyKey.self, forKey: .attributes)
        var attributes: [String: AttributeValue?] = [:]
        for key in object.allKeys {
            attributes[key.stringValue] = try object.decodeNil(forKey: key) ? .some(nil) : object.decode(AttributeValue.self, forKey: key)
        }
        self.attributes = attributes
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var object = container.nestedContainer(keyedBy: AnyKey.self, forKey: .attributes)
        for (key, value) in attributes.sorted(by: { $0.key < $1.key }) {
            let codingKey = AnyKey(stringValue: key)
            if let value { try object.encode(value, forKey: codingKey) } else { try object.encodeNil(forKey: codingKey) }
        }
    }

    /// The most keys a user holds.
    public static let keyLimit = 50
    /// The longest key, in characters (`a-z`, `0-9`, `_`).
    public static let keyLength = 40
}

/// The answer of `PUT /v1/attributes`: every attribute the server now keeps for the user.
public struct UserAttributes: Sendable, Codable, Hashable {
    public var attributes: [String: AttributeValue]
    /// When they last changed (ISO 8601); nil when there are none.
    public var updatedAt: String?

    public init(attributes: [String: AttributeValue], updatedAt: String?) {
        self.attributes = attributes
        self.updatedAt = updatedAt
    }
}

/// The JSON body of `POST /v1/activity`: one thing the user did in the app.
public struct ActivityEvent: Sendable, Codable, Hashable, Identifiable {
    /// Chosen by the app (a UUID), so that an event sent again after a lost answer is kept once.
    public var id: String
    /// 1–64 of `a-z 0-9 _ .` (`export_failed`, `checkout.started`).
    public var name: String
    /// At most 10, keys and values as attributes'.
    public var properties: [String: AttributeValue]
    /// When it happened on the device (ISO 8601); the server keeps its own time when absent or
    /// more than a day off.
    public var occurredAt: String?

    public init(id: String, name: String, properties: [String: AttributeValue] = [:], occurredAt: String? = nil) {
        self.id = id
        self.name = name
        self.properties = properties
        self.occurredAt = occurredAt
    }

    private enum CodingKeys: String, CodingKey { case id, name, properties, occurredAt }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        properties = try container.decodeIfPresent([String: AttributeValue].self, forKey: .properties) ?? [:]
        occurredAt = try container.decodeIfPresent(String.self, forKey: .occurredAt)
    }

    /// The most properties of one event.
    public static let propertyLimit = 10
    /// The longest name, in characters.
    public static let nameLength = 64
    /// The events the server keeps per user (the newest).
    public static let keptPerUser = 50
}

/// The answer of `POST /v1/activity`: the event as kept.
public struct RecordedActivity: Sendable, Codable, Hashable {
    public var id: String
    public var name: String
    /// ISO 8601: the device's time, or the server's.
    public var occurredAt: String

    public init(id: String, name: String, occurredAt: String) {
        self.id = id
        self.name = name
        self.occurredAt = occurredAt
    }
}

/// A JSON object's key, whatever it is.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
