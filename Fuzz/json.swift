// Fuzz target: the JSON reader used on request bodies and Discord's answers. Whatever parses
// writes back out and parses to the same value.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    let shape = JSON.shape(of: data)
    guard let value = try? JSON.parse(data) else { return 0 }
    // What the byte scan says bounds what parsing builds (the diagnostics limits rely on it;
    // Foundation's reader accepts some inputs with stray bytes the scan counts, so: bounds, not equality).
    let measured = value.measured
    precondition(measured.depth <= shape.depth, "the scan undercounted the depth")
    precondition(measured.values <= shape.values, "the scan undercounted the values")
    let again = try? JSON.parse(value.encoded())
    precondition(again == value, "JSON does not survive a round trip")
    return 0
}
