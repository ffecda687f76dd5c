// Fuzz target: the checks of what uploaded files' bytes are (FileContent), which see every byte
// anyone with the app key sends as a file: JSON by a hand-written validator, UTF-8 text, the
// signatures of the binary types.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFileContent(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    for type in FileContent.checkedTypes { _ = FileContent.matches(type, bytes) }
    _ = FileContent.sniff(bytes)
    // Text: the same answer as the standard library's UTF-8 validation, without making a string.
    let text = !bytes.contains(0) && String(validating: bytes, as: UTF8.self) != nil
    precondition(FileContent.isPlainText(bytes) == text, "the UTF-8 check disagrees with the standard library")
    // JSON: whitespace around a value changes nothing (a byte-order mark must come first).
    if !(count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF) {
        let padded = [0x20, 0x0A] + Array(bytes) + [0x09, 0x0D]
        let same = padded.withUnsafeBytes { FileContent.isJSON($0) }
        precondition(FileContent.isJSON(bytes) == same, "whitespace around a value changed whether it is JSON")
    }
    // A valid document is valid text too (JSON is UTF-8 without raw NULs), and as an array's element.
    if FileContent.isJSON(bytes) {
        precondition(text, "JSON that is not UTF-8 text")
        let wrapped = Array("[".utf8) + Array(bytes) + Array("]".utf8)
        let depthRoom = wrapped.withUnsafeBytes { FileContent.isJSON($0) }
        // Wrapping adds one level: refused only at the nesting limit.
        if !depthRoom { precondition(Array(bytes).filter { $0 == 0x5B || $0 == 0x7B }.count >= FileContent.jsonDepthLimit, "a valid value refused as an element") }
    }
    return 0
}
