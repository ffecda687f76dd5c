// Fuzz target: the SDK's reading of the API's timestamps (ConversationMessage's dates). Any text:
// no crash; what it accepts reads back the same through ISO8601DateFormatter, to the second.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTimestamp(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    guard let date = Timestamp.date(text) else { return 0 }
    precondition(date.timeIntervalSince1970.isFinite, "an infinite date")
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    var whole = text
    // The formatter takes fractions of up to 3 digits and a T; compare whole seconds.
    if let dot = whole.firstIndex(of: "."), let end = whole[dot...].firstIndex(where: { !"0123456789.".contains($0) }) {
        whole.removeSubrange(dot..<end)
    }
    whole = whole.replacingOccurrences(of: " ", with: "T").replacingOccurrences(of: "t", with: "T").replacingOccurrences(of: "z", with: "Z")
    formatter.formatOptions = [.withInternetDateTime]
    // Foundation's calendar is Julian before 1582 (RFC 3339's is Gregorian throughout): compared from 1600.
    // The fraction is compared as a fraction: 23:59:59.999…9 may round to the next second in a Double.
    if let year = Int(whole.prefix(4)), year >= 1600, let reference = formatter.date(from: whole) {
        let digits = text.firstIndex(of: ".").map { dot in text[text.index(after: dot)...].prefix(while: { $0.isASCII && $0.isNumber }).prefix(6) } ?? ""
        let fraction = Double("0.\(digits)0") ?? 0
        let expected = reference.timeIntervalSince1970 + fraction
        precondition(abs(expected - date.timeIntervalSince1970) < 0.001, "\(text): \(date) vs \(reference) + \(fraction)")
    }
    return 0
}
