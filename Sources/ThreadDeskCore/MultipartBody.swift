/// A `multipart/form-data` body (RFC 7578) read as positions in the bytes it arrived in: a file
/// part is never copied, the server slices it out of the request's own buffer.
public enum MultipartBody {
    public struct Part: Sendable, Hashable {
        public var name: String
        public var filename: String?
        public var contentType: String?
        /// Where the part's content lies in the body.
        public var range: Range<Int>
    }

    public enum Failure: Error, Sendable, Hashable {
        case malformed(String)
        case tooManyParts(Int)
    }

    /// The most bytes of headers one part may have.
    public static let headerLimit = 8 * 1024

    /// The boundary of a `multipart/form-data` content type (1–70 characters, RFC 2046), or nil.
    public static func boundary(contentType: String) -> String? {
        let pieces = contentType.split(separator: ";").map { $0.trimmingSpaces() }
        guard pieces.first?.lowercased() == "multipart/form-data" else { return nil }
        for piece in pieces.dropFirst() where piece.lowercased().hasPrefix("boundary=") {
            var value = Substring(piece.dropFirst("boundary=".count))
            if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
            let allowed = value.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || Array("'()+_,-./:=? ".utf8).contains(byte)
            }
            guard (1...70).contains(value.utf8.count), allowed, value.last != " " else { return nil }
            return String(value)
        }
        return nil
    }

    /// The parts of `body`, in order; at most `maxParts` (more is an error, not a truncation).
    /// Linear in the body's size: the delimiter has one CR, so a partial match never overlaps
    /// the next candidate.
    public static func parse(_ body: UnsafeRawBufferPointer, boundary: String, maxParts: Int) throws(Failure) -> [Part] {
        let dashBoundary = Array("--\(boundary)".utf8)
        let delimiter = Array("\r\n--\(boundary)".utf8)
        // The body may begin with the boundary itself, or with a preamble and then CRLF + boundary.
        var cursor: Int
        if starts(body, at: 0, with: dashBoundary) {
            cursor = dashBoundary.count
        } else if let found = find(delimiter, in: body, from: 0) {
            cursor = found + delimiter.count
        } else {
            throw .malformed("no boundary")
        }
        var parts: [Part] = []
        while true {
            // After a delimiter: "--" ends the body; otherwise (optional spaces) CRLF begins a part.
            if starts(body, at: cursor, with: Array("--".utf8)) { return parts }
            while cursor < body.count, body[cursor] == 0x20 || body[cursor] == 0x09 { cursor += 1 }
            guard starts(body, at: cursor, with: [0x0D, 0x0A]) else { throw .malformed("a boundary not followed by CRLF") }
            let headersStart = cursor + 2
            guard parts.count < maxParts else { throw .tooManyParts(maxParts) }
            let headerWindow = UnsafeRawBufferPointer(rebasing: body[headersStart..<min(body.count, headersStart + headerLimit)])
            guard let headersLength = find(Array("\r\n\r\n".utf8), in: headerWindow, from: 0) else {
                throw .malformed("part headers without an end, or longer than \(headerLimit) bytes")
            }
            let contentStart = headersStart + headersLength + 4
            guard let next = find(delimiter, in: body, from: contentStart) else { throw .malformed("a part without a closing boundary") }
            let headers = String(decoding: UnsafeRawBufferPointer(rebasing: body[headersStart..<(headersStart + headersLength)]), as: UTF8.self)
            var part = try Self.part(headers: headers)
            part.range = contentStart..<next
            parts.append(part)
            cursor = next + delimiter.count
        }
    }

    private static func part(headers: String) throws(Failure) -> Part {
        var name: String?
        var filename: String?
        var contentType: String?
        for line in headers.split(separator: "\r\n", omittingEmptySubsequences: true) {
            guard let colon = line.firstIndex(of: ":") else { throw .malformed("a part header without a colon") }
            let field = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces()
            if field == "content-type" { contentType = value.isEmpty ? nil : value }
            guard field == "content-disposition" else { continue }
            let parameters = Self.parameters(value)
            guard parameters.first?.key.lowercased() == "form-data" else { throw .malformed("a part that is not form-data") }
            for (key, value) in parameters.dropFirst() {
                switch key.lowercased() {
                case "name": name = value
                case "filename": filename = value
                default: break
                }
            }
        }
        guard let name else { throw .malformed("a part without a name") }
        return Part(name: name, filename: filename, contentType: contentType, range: 0..<0)
    }

    /// `form-data; name="a;b"; filename=x` as ordered pairs; quoted values keep their `;` and take
    /// backslash escapes. The first pair is the disposition type with an empty value.
    static func parameters(_ value: String) -> [(key: String, value: String)] {
        var result: [(key: String, value: String)] = []
        var characters = Substring(value)
        func skipSpace() { characters = characters.drop { $0 == " " || $0 == "\t" } }
        while true {
            skipSpace()
            guard !characters.isEmpty else { break }
            let key = characters.prefix { $0 != "=" && $0 != ";" }
            characters = characters.dropFirst(key.count)
            var parsed = ""
            if characters.first == "=" {
                characters = characters.dropFirst()
                skipSpace()
                if characters.first == "\"" {
                    characters = characters.dropFirst()
                    var escaped = false
                    while let character = characters.first {
                        characters = characters.dropFirst()
                        if escaped { parsed.append(character); escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { break } else { parsed.append(character) }
                    }
                    characters = characters.drop { $0 != ";" }
                } else {
                    let raw = characters.prefix { $0 != ";" }
                    parsed = raw.trimmingSpaces()
                    characters = characters.dropFirst(raw.count)
                }
            }
            result.append((key.trimmingSpaces(), parsed))
            if characters.first == ";" { characters = characters.dropFirst() }
        }
        return result
    }

    private static func starts(_ body: UnsafeRawBufferPointer, at offset: Int, with bytes: [UInt8]) -> Bool {
        guard offset >= 0, offset + bytes.count <= body.count else { return false }
        for index in bytes.indices where body[offset + index] != bytes[index] { return false }
        return true
    }

    /// The first position of `needle` (which begins with its only CR, or is short) at or after `from`.
    private static func find(_ needle: [UInt8], in body: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard let first = needle.first, needle.count <= body.count else { return nil }
        var position = from
        let last = body.count - needle.count
        while position <= last {
            if body[position] == first, starts(body, at: position, with: needle) { return position }
            position += 1
        }
        return nil
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (Foundation-free: the fuzz target builds this alone).
    fileprivate func trimmingSpaces() -> String {
        var view = Substring(self).unicodeScalars
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
