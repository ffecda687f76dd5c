// Fuzz target: the rules for a user's text (validation, splitting into posts, clipping) and the
// escaping of note markers. A hostile text must end in an answer, never a hang or a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzText(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    _ = MessageText.validate(text)
    // Small limits reach the cutting paths with small inputs; 2 is the least that holds any
    // scalar (one outside the BMP is two UTF-16 units).
    for limit in [2, 3, 7, 16] {
        let parts = MessageText.split(text, limit: limit)
        for part in parts { precondition(part.utf16.count <= limit, "a part is longer than the limit") }
        let kept = text.unicodeScalars.filter { !$0.properties.isWhitespace }
        let joined = parts.joined().unicodeScalars.filter { !$0.properties.isWhitespace }
        precondition(Array(kept) == Array(joined), "splitting lost or changed text")
        precondition(MessageText.clip(text, limit: limit).utf16.count <= limit, "clip overran")
    }
    precondition(NoteMarkers.userText(posted: NoteMarkers.postable(userText: text)) == text, "escaping is not undone")
    return 0
}
