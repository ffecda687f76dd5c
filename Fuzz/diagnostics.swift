// Fuzz target: the readable summary of an uploaded diagnostics document. Any object yields a
// note that fits in one Discord post.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDiagnostics(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    guard let document = try? JSON.parse(data) else { return 0 }
    let summary = DiagnosticsSummary(filename: "diagnostics.json", byteCount: count, document: document)
    precondition(summary.note.utf16.count <= MessageText.discordLimit, "the summary does not fit in a post")
    return 0
}
