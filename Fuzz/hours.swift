// Fuzz target: `SUPPORT_HOURS` as an operator may mistype it. Whatever parses answers for any
// date: the next opening is in the future and support is in then.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHours(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    guard let hours = try? SupportHours(text) else { return 0 }
    for seconds in [0.0, 1_795_464_000, 1_795_500_000.5, 1_800_000_000] {
        let date = Date(timeIntervalSince1970: seconds)
        let open = hours.isOpen(at: date)
        if let next = hours.nextOpening(after: date) {
            precondition(!open, "an opening announced while open")
            precondition(next > date, "the next opening is in the past")
            precondition(hours.isOpen(at: next), "closed at the announced opening")
        }
    }
    return 0
}
