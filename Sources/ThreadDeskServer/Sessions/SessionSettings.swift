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
        if let days = problem.days(value("SESSION_IDLE_DAYS"), name: "SESSION_IDLE_DAYS", maximum: Self.maximumIdleDays) {
            idleAfter = days
        }
    }
}
