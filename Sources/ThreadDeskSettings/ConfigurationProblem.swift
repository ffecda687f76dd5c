/// Why a program cannot start: every missing and every malformed setting, named at once (the
/// commands exit 78 with it). Values are never part of it: a secret that is too short is named,
/// not shown.
public struct ConfigurationProblem: Error, CustomStringConvertible, Sendable, Equatable {
    /// Who cannot start, for the message: "ThreadDesk", "threaddesk gateway".
    public var program: String
    public var missing: [String]
    public var invalid: [String]

    public init(program: String = "ThreadDesk", missing: [String], invalid: [String]) {
        self.program = program
        self.missing = missing
        self.invalid = invalid
    }

    public var isEmpty: Bool { missing.isEmpty && invalid.isEmpty }

    public var description: String {
        var parts: [String] = []
        if !missing.isEmpty { parts.append("missing: \(missing.joined(separator: ", "))") }
        if !invalid.isEmpty { parts.append("invalid: \(invalid.joined(separator: ", "))") }
        return "\(program) cannot start; configuration \(parts.joined(separator: "; ")). See .env.example."
    }

    /// The same settings at fault, whoever reports them.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.missing == rhs.missing && lhs.invalid == rhs.invalid }
}

extension ConfigurationProblem {
    /// `text` of the variable `name`: a whole number of days from 1 to `maximum`, or `off` (nil);
    /// nil when unset or invalid (then named here).
    public mutating func days(_ text: String?, name: String, maximum: Int) -> Duration?? {
        guard let text else { return nil }
        if text.lowercased() == "off" { return .some(nil) }
        if let days = Int(text), (1...maximum).contains(days) { return .some(.seconds(days * 86_400)) }
        invalid.append("\(name) (whole days, 1 to \(maximum), or off)")
        return nil
    }
}
