// Fuzz target: what the app says about its user (`PUT /v1/attributes`, `POST /v1/activity`), as
// an attacker holding the app key may write it. A date that parses prints and parses back to the
// same moment; a value kept is one line of at most 256 characters; what support reads escapes
// every markdown character and fits the room it was given.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProfile(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    if let date = ProfileRules.date(text), date.timeIntervalSince1970 >= 0, date.timeIntervalSince1970 < 253_402_300_800 {
        let printed = ProfileRules.iso(date)
        precondition(ProfileRules.date(printed) == Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)), "\(printed) reads back otherwise")
    }
    let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
    let key = parts.first ?? ""
    let value = parts.count > 1 ? parts[1] : text
    var attributes: [String: AttributeValue] = [:]
    for candidate in [AttributeValue.string(value), .date(value)] {
        guard let kept = try? ProfileRules.checked(candidate, field: key) else { continue }
        if case .string(let string) = kept {
            precondition(string.count <= AttributeValue.textLimit, "a long value kept")
            precondition(!string.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, "a control character kept")
        }
        let shown = ProfileText.shown(kept)
        if case .date = kept {
            precondition(shown.hasPrefix("<t:") && shown.hasSuffix(":f>"), "a date shown as \(shown)")
        } else {
            // Every markdown character behind a backslash, and every backslash escaping one.
            var scalars = shown.unicodeScalars.makeIterator()
            while let scalar = scalars.next() {
                if scalar == "\\" {
                    guard let next = scalars.next() else { preconditionFailure("a lone backslash ends \(shown)") }
                    precondition(DiscordMarkdown.special.contains(next), "a backslash before \(next)")
                } else {
                    precondition(!DiscordMarkdown.special.contains(scalar), "\(scalar) unescaped in \(shown)")
                }
            }
        }
        attributes[ProfileRules.isKey(key) ? key : "value"] = kept
    }
    if let merged = try? ProfileRules.merged([:], [key: .string(value)]) {
        precondition(merged.keys.allSatisfy(ProfileRules.isKey), "a bad key kept")
    }
    for budget in [0, 40, 300] {
        let shown = ProfileText.attributes(attributes, budget: budget) ?? ""
        precondition(shown.utf16.count <= max(budget, 24), "\(shown.utf16.count) past \(budget)")
    }
    return 0
}
