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
        case invalidValue(field: String)
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
            let text: String
            switch value {
            case .string(let string): text = string
            case .number(let number): text = number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) : String(number)
            case .bool(let bool): text = String(bool)
            case .null: continue
            default: throw .invalidValue(field: key)
            }
            guard key.count <= 64, text.count <= Self.maxValueLength, !text.contains(where: \.isNewline) else {
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

    /// The `:ninja:` note posted when the device info changes.
    public var note: String {
        var lines = [":ninja: **Device info**"]
        if let appLabel { lines.append("- App: \(appLabel)") }
        let os = [osPlatform, osVersion].compactMap { $0 }.joined(separator: " ")
        if !os.isEmpty { lines.append("- OS: \(os)") }
        if let deviceModel { lines.append("- Device: \(deviceModel)") }
        if let locale { lines.append("- Locale: \(locale)") }
        for key in other.keys.sorted() { lines.append("- \(key): \(other[key]!)") }
        return MessageText.clip(lines.joined(separator: "\n"))
    }
}
