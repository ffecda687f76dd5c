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
    _ = AttachmentRules.isAllowed(text, in: AttachmentRules.defaultTypes)
    _ = AttachmentRules.contentMatches(String(text.prefix(30)), prefix: Array(bytes))
    return 0
}
