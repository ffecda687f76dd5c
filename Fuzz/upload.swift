// Fuzz target: the server's multipart/form-data reader (uploads from anyone with the app key) and
// the rules for uploaded files' names and types.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUpload(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    _ = MultipartBody.boundary(contentType: String(decoding: bytes.prefix(90), as: UTF8.self))
    if let parts = try? MultipartBody.parse(bytes, boundary: "fz", maxParts: 12) {
        precondition(parts.count <= 12, "more parts than allowed")
        var end = 0
        for part in parts {
            precondition(part.range.lowerBound >= end && part.range.upperBound <= count, "a part outside the body or overlapping")
            end = part.range.upperBound
        }
    }
    let text = String(decoding: bytes, as: UTF8.self)
    let name = AttachmentRules.sanitizedFilename(text)
    precondition(!name.isEmpty && name.count <= AttachmentRules.filenameLimit, "a file name empty or too long")
    precondition(!name.contains("/") && !name.contains("\\") && !name.unicodeScalars.contains { $0.value < 0x20 }, "a path or control character kept")
    precondition(!name.hasPrefix("."), "a hidden file name")
    for type in ["text/plain", "image/png", "application/x-unknown"] {
        let agreeing = AttachmentRules.filename(name, agreeingWith: type)
        precondition(agreeing.hasPrefix(name), "agreeing with a type changed the name instead of adding to it")
        precondition(AttachmentRules.filename(agreeing, agreeingWith: type) == agreeing, "an agreeing name does not agree")
    }
    let disposition = AttachmentRules.contentDisposition(inline: false, filename: text)
    precondition(disposition.unicodeScalars.allSatisfy { $0.isASCII && $0.value >= 0x20 && $0.value != 0x7F }, "a header value that is not plain ASCII")
    precondition(disposition.filter { $0 == "\"" }.count == 2, "a quote inside the fallback name")
    _ = AttachmentRules.isAllowed(text, in: AttachmentRules.defaultTypes)
    _ = AttachmentRules.contentMatches(String(text.prefix(30)), prefix: Array(bytes))
    return 0
}
