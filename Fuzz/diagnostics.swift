// Fuzz target: the readable summary of an uploaded diagnostics document. Any object yields a
// note that fits in one Discord post and holds no control character (a NUL in a value would cut
// the note where the store keeps it).
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDiagnostics(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    guard let document = try? JSON.parse(data) else { return 0 }
    let summary = DiagnosticsSummary(filename: "diagnostics.json", byteCount: count, document: document)
    let note = summary.note
    precondition(note.utf16.count <= MessageText.discordLimit, "the summary does not fit in a post")
    precondition(ControlCharacters.first(in: note) == nil && !note.unicodeScalars.contains("\r"), "the summary holds a control character")
    return 0
}
