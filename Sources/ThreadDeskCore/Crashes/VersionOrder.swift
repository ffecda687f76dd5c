import Foundation

/// The order of app versions, for rules like "fixed in 4.3": dotted numbers compared as numbers
/// ("4.10" after "4.9"), a missing component as 0 ("4.3" == "4.3.0"), and what follows a
/// component's digits ("4.3b2") compared as text after them.
public enum VersionOrder {
    public static func compare(_ left: String, _ right: String) -> ComparisonResult {
        let lefts = components(left), rights = components(right)
        for index in 0..<max(lefts.count, rights.count) {
            let missing: (digits: Substring, suffix: Substring) = ("", "")
            let a = index < lefts.count ? lefts[index] : missing
            let b = index < rights.count ? rights[index] : missing
            let numbers = compareDigits(a.digits, b.digits)
            if numbers != .orderedSame { return numbers }
            if a.suffix != b.suffix { return a.suffix < b.suffix ? .orderedAscending : .orderedDescending }
        }
        return .orderedSame
    }

    /// Whether `version` comes before `other` (a user on it has not got the fix yet).
    public static func isOlder(_ version: String, than other: String) -> Bool {
        compare(version, other) == .orderedAscending
    }

    /// Each component's leading digits (no leading zeros) and the rest.
    static func components(_ version: String) -> [(digits: Substring, suffix: Substring)] {
        version.trimmingCharacters(in: .whitespaces).split(separator: ".", omittingEmptySubsequences: false).map { part in
            let digits = part.prefix { $0.isASCII && $0.isNumber }
            let suffix = part[digits.endIndex...]
            let significant = digits.drop { $0 == "0" }
            return (significant, suffix)
        }
    }

    /// Digits of any length compared as numbers (no overflow): the longer is larger.
    static func compareDigits(_ a: Substring, _ b: Substring) -> ComparisonResult {
        if a.count != b.count { return a.count < b.count ? .orderedAscending : .orderedDescending }
        if a == b { return .orderedSame }
        return a < b ? .orderedAscending : .orderedDescending
    }
}
