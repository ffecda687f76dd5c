import Foundation

/// A `multipart/form-data` body split into its parts (RFC 7578), enough for Discord's uploads:
/// a `payload_json` field plus `files[n]` parts.
struct MultipartForm: Sendable {
    struct Part: Sendable {
        var name: String
        var filename: String?
        var contentType: String?
        var data: Data
    }

    var parts: [Part]

    /// The boundary parameter of a `multipart/form-data` content type, or nil for any other type.
    static func boundary(contentType: String) -> String? {
        let pieces = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard pieces.first?.lowercased() == "multipart/form-data" else { return nil }
        for piece in pieces.dropFirst() where piece.lowercased().hasPrefix("boundary=") {
            let value = piece.dropFirst("boundary=".count)
            return value.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return nil
    }

    init(parts: [Part]) { self.parts = parts }

    init?(body: Data, boundary: String) {
        let delimiter = Data("--\(boundary)".utf8)
        let headerEnd = Data("\r\n\r\n".utf8)
        var parts: [Part] = []
        guard var cursor = body.range(of: delimiter)?.upperBound else { return nil }
        while true {
            // After a delimiter: "--" closes the body, CRLF starts a part.
            let rest = body[cursor...]
            if rest.starts(with: Data("--".utf8)) { break }
            guard rest.starts(with: Data("\r\n".utf8)) else { return nil }
            let partStart = cursor + 2
            guard let headersRange = body.range(of: headerEnd, in: partStart..<body.endIndex),
                let next = body.range(of: Data("\r\n".utf8) + delimiter, in: headersRange.upperBound..<body.endIndex)
            else { return nil }
            let headerText = String(decoding: body[partStart..<headersRange.lowerBound], as: UTF8.self)
            guard var part = Self.part(headers: headerText) else { return nil }
            part.data = Data(body[headersRange.upperBound..<next.lowerBound])
            parts.append(part)
            cursor = next.upperBound
        }
        self.parts = parts
    }

    private static func part(headers: String) -> Part? {
        var name: String?
        var filename: String?
        var contentType: String?
        for line in headers.components(separatedBy: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let field = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if field == "content-type" { contentType = value }
            guard field == "content-disposition" else { continue }
            for parameter in value.split(separator: ";").dropFirst() {
                let pair = parameter.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                guard pair.count == 2 else { continue }
                let unquoted = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                switch pair[0].lowercased() {
                case "name": name = unquoted
                case "filename": filename = unquoted
                default: break
                }
            }
        }
        guard let name else { return nil }
        return Part(name: name, filename: filename, contentType: contentType, data: Data())
    }
}
