import DiscordREST
import Foundation

/// What the widget reports about the app and device. Known fields are named; anything else the
/// app sends (short scalars only) is kept in `other` and shown to support as it came.
public struct InstallationInfo: Sendable, Hashable, Codable {
    public var appVersion: String?
    public var buildVersion: String?
    public var osPlatform: String?
    public var osVersion: String?
    public var locale: String?
    public var deviceModel: String?
    public var other: [String: String]

    public static let maxFields = 32
    public static let maxValueLength = 200
    public static let maxKeyLength = 64

    public init(
        appVersion: String? = nil, buildVersion: String? = nil, osPlatform: String? = nil, osVersion: String? = nil,
        locale: String? = nil, deviceModel: String? = nil, other: [String: String] = [:]
    ) {
        self.appVersion = appVersion
        self.buildVersion = buildVersion
        self.osPlatform = osPlatform
        self.osVersion = osVersion
        self.locale = locale
        self.deviceModel = deviceModel
        self.other = other
    }

    public enum Problem: Error, Equatable {
        case notAnObject
        case tooManyFields
        /// A key that is not a plain name (``isValidKey(_:)``); not echoed, it may be anything.
        case invalidKey
        case invalidValue(field: String)
        /// A value holding a control character (``ControlCharacters``): refused, never kept cut.
        case controlCharacter(field: String, Unicode.Scalar)
    }

    /// A key is shown to support as a label at the start of a note's line, where a newline or
    /// markdown would make a line, a heading or a link of its own: only letters, digits, spaces
    /// and `_ - . /` are names.
    public static func isValidKey(_ key: String) -> Bool {
        (1...maxKeyLength).contains(key.count)
            && key.allSatisfy { $0.isLetter || $0.isNumber || " _-./".contains($0) }
    }

    private nonisolated(unsafe) static let known: [String: WritableKeyPath<InstallationInfo, String?>] = [
        "appVersion": \.appVersion, "buildVersion": \.buildVersion, "osPlatform": \.osPlatform,
        "osVersion": \.osVersion, "locale": \.locale, "deviceModel": \.deviceModel,
    ]

    /// Reads the widget's JSON object; `userId` (sent by the legacy client) is not device info.
    public init(json: JSON) throws(Problem) {
        guard let object = json.objectValue else { throw .notAnObject }
        let fields = object.filter { $0.key != "userId" }
        guard fields.count <= Self.maxFields else { throw .tooManyFields }
        self.init()
        for (key, value) in fields {
            guard Self.isValidKey(key) else { throw .invalidKey }
            let text: String
            switch value {
            case .string(let string): text = string
            case .number(let number): text = number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) : String(number)
            case .integer(let number): text = String(number)
            case .bool(let bool): text = String(bool)
            case .null: continue
            default: throw .invalidValue(field: key)
            }
            if let control = ControlCharacters.first(in: text) {
                throw .controlCharacter(field: key, control)
            }
            guard text.count <= Self.maxValueLength, !text.contains(where: \.isNewline) else {
                throw .invalidValue(field: key)
            }
            if let path = Self.known[key] { self[keyPath: path] = text } else { other[key] = text }
        }
    }

    /// `App 1.4.0 (142)`-style pieces, for thread names and notes.
    public var appLabel: String? {
        guard let appVersion else { return buildVersion.map { "build \($0)" } }
        return buildVersion.map { "\(appVersion) (\($0))" } ?? appVersion
    }

    /// The `:ninja:` note posted when the device info changes. Every value (and key) is the
    /// client's, so its markdown is shown as text, never made into links, mentions or headings.
    public var note: String {
        let shown = DiscordMarkdown.escaped
        var lines = [":ninja: **Device info**"]
        if let appLabel { lines.append("- App: \(shown(appLabel))") }
        let os = [osPlatform, osVersion].compactMap { $0 }.joined(separator: " ")
        if !os.isEmpty { lines.append("- OS: \(shown(os))") }
        if let deviceModel { lines.append("- Device: \(shown(deviceModel))") }
        if let locale { lines.append("- Locale: \(shown(locale))") }
        for key in other.keys.sorted() { lines.append("- \(shown(key)): \(shown(other[key]!))") }
        return MessageText.clip(lines.joined(separator: "\n"))
    }
}
