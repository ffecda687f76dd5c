import ThreadDeskSettings

/// How long a session lives: a token nobody uses ends, so one copied off a device long ago
/// stops working by itself.
public struct SessionSettings: Sendable, Hashable {
    /// `SESSION_IDLE_DAYS`: a token not used this long ends (its next request gets 401); nil
    /// (`off`): tokens end only when signed out.
    public var idleAfter: Duration? = .seconds(Self.defaultIdleDays * 86_400)
    public static let defaultIdleDays = 90
    static let maximumIdleDays = 36_500

    public init() {}

    /// How often a token's use is written at most: a day, or a quarter of the idle time if shorter.
    var useNotedEvery: Duration? { idleAfter.map { min(.seconds(86_400), $0 / 4) } }

    mutating func read(_ value: (String) -> String?, problem: inout ConfigurationProblem) {
        if let days = Self.days(value("SESSION_IDLE_DAYS"), name: "SESSION_IDLE_DAYS", maximum: Self.maximumIdleDays, problem: &problem) {
            idleAfter = days
        }
    }

    /// `text` of the variable `name`: a whole number of days from 1 to `maximum`, or `off` (nil);
    /// nil when unset or invalid (then named in `problem`).
    static func days(_ text: String?, name: String, maximum: Int, problem: inout ConfigurationProblem) -> Duration?? {
        guard let text else { return nil }
        if text.lowercased() == "off" { return .some(nil) }
        if let days = Int(text), (1...maximum).contains(days) { return .some(.seconds(days * 86_400)) }
        problem.invalid.append("\(name) (whole days, 1 to \(maximum), or off)")
        return nil
    }
}
