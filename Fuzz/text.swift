// Fuzz target: the rules for a user's text (validation, splitting into posts, clipping) and the
// escaping of note markers, and the silent-reply marker. A hostile text must end in an answer, never a hang or a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzText(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    // A text is kept whole or refused whole: what validation accepts is the text as sent (its
    // edges' whitespace aside), and nothing in it can cut it in a C string or be refused by PostgreSQL.
    switch MessageText.validate(text) {
    case .success(let kept):
        precondition(ControlCharacters.first(in: kept) == nil && !kept.utf8.contains(0), "a control character was accepted")
        precondition(kept == text.trimmingWhitespace(), "what was kept is not the text sent, trimmed")
    case .failure(.controlCharacter(let scalar)):
        precondition(ControlCharacters.isRefused(scalar) && text.unicodeScalars.contains(scalar), "a refusal names a character not refused or not sent")
    case .failure:
        precondition(ControlCharacters.first(in: text) == nil, "a text with a control character refused for another reason first")
    }
    let pictured = ControlCharacters.shown(text)
    precondition(ControlCharacters.first(in: pictured) == nil && pictured.unicodeScalars.count == text.unicodeScalars.count, "showing control characters lost or left one")
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
    let posted = NoteMarkers.postable(userText: text)
    precondition(NoteMarkers.userText(posted: posted) == text, "escaping is not undone")
    precondition(!NoteMarkers.startsNote(posted), "a user's text posted as a note")
    // Whitespace and invisible characters in front of a marker change nothing, on either side.
    for lead in [" ", "\u{200B}", "\u{200D}", "\u{2060}", "\u{FEFF}", "\u{00AD}"] {
        precondition(NoteMarkers.startsNote(lead + text) == NoteMarkers.startsNote(text), "a leading invisible character changed what is a note")
        precondition(!NoteMarkers.startsNote(NoteMarkers.postable(userText: lead + text)), "a user's text behind an invisible character posted as a note")
    }
    for limit in [NoteMarkers.userTextPrefix.utf16.count + 2, 40] {
        let posts = NoteMarkers.posts(ofUserText: text, limit: limit)
        for post in posts {
            precondition(post.utf16.count <= limit, "an escaped post is longer than the limit")
            precondition(!NoteMarkers.startsNote(post), "a part of a user's text posted as a note")
        }
    }
    // A silent reply's marker: only at the start, taken off whole; what is shown never grows and
    // is a suffix of the reply.
    let shown = NoteMarkers.shownReply(text)
    precondition(shown.unicodeScalars.count <= text.unicodeScalars.count, "the shown reply grew")
    precondition(text.unicodeScalars.elementsEqual(shown.unicodeScalars) == !NoteMarkers.isSilent(text), "a marker kept or a plain reply cut")
    precondition(Array(text.unicodeScalars).reversed().starts(with: Array(shown.unicodeScalars).reversed()), "the shown reply is not the reply's end")
    precondition(NoteMarkers.isSilent(":cold:" + text) && NoteMarkers.isSilent(" 🥶" + text), "a leading marker missed")
    // A snippet's fields: without fields the text is as written; a value is put in once, never
    // read again as a field (a field whose value is itself leaves any text as it was).
    precondition(SnippetText.fill(text, fields: [:]) == text, "a snippet without fields changed")
    precondition(SnippetText.fill(text, fields: ["os": "{os}", "": "{}"]) == text, "a filled value was read again")
    _ = SnippetText.fill(text, fields: ["os": nil, "app_version": String(text.prefix(8))])
    return 0
}
