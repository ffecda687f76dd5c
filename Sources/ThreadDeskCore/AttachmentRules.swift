/// What a user may upload: names made safe to show and store, types from an allow-list, and
/// images that are what they say they are.
public enum AttachmentRules {
    /// Images, video, PDF, text, JSON and zip: what a support chat needs, and nothing a browser
    /// would run (no SVG, no HTML).
    public static let defaultTypes = [
        "image/png", "image/jpeg", "image/gif", "image/webp", "image/heic", "image/heif", "video/mp4", "video/quicktime",
        "application/pdf", "text/plain", "application/json", "application/zip",
    ]

    /// Longest file name kept, in characters (the extension is kept when cutting).
    public static let filenameLimit = 100

    /// A file name with no path, no control or reserved characters and no leading dots, at most
    /// `filenameLimit` characters; "file" when nothing is left.
    public static func sanitizedFilename(_ raw: String) -> String {
        let last = raw.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        let reserved: Set<Character> = ["\"", "<", ">", ":", "|", "?", "*", "%", "`"]
        var name = String(
            last.unicodeScalars.filter { scalar in
                !(scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value))
                    && !(0x200B...0x200F).contains(scalar.value) && !(0x202A...0x202E).contains(scalar.value)
                    && !(0x2066...0x2069).contains(scalar.value) && scalar.value != 0xFEFF
            }.map(Character.init).map { reserved.contains($0) || $0.isNewline ? "_" : $0 })
        name = String(name.drop { $0 == "." || $0 == " " })
        while name.last == " " || name.last == "." { name.removeLast() }
        if name.count > filenameLimit {
            let dot = name.lastIndex(of: ".")
            let ext = dot.map { String(name[$0...]) }.flatMap { $0.count <= 12 ? $0 : nil } ?? ""
            name = String(name.prefix(filenameLimit - ext.count)) + ext
        }
        return name.isEmpty ? "file" : name
    }

    /// The media types each extension stands for (the first is what a file with no type is
    /// taken for): the allowed ones, and those a browser would run as a page or a script.
    static let extensionTypes: [String: [String]] = [
        "png": ["image/png"], "jpg": ["image/jpeg"], "jpeg": ["image/jpeg"], "gif": ["image/gif"], "webp": ["image/webp"],
        "heic": ["image/heic", "image/heif"], "heif": ["image/heif", "image/heic"], "mp4": ["video/mp4"], "mov": ["video/quicktime"],
        "pdf": ["application/pdf"], "txt": ["text/plain"], "log": ["text/plain"], "json": ["application/json"], "zip": ["application/zip"],
        "html": ["text/html"], "htm": ["text/html"], "shtml": ["text/html"], "xhtml": ["application/xhtml+xml"], "xht": ["application/xhtml+xml"],
        "svg": ["image/svg+xml"], "svgz": ["image/svg+xml"], "js": ["text/javascript", "application/javascript"],
        "mjs": ["text/javascript", "application/javascript"], "cjs": ["text/javascript", "application/javascript"],
        "xml": ["application/xml", "text/xml"], "xsl": ["application/xslt+xml", "application/xml", "text/xml"],
        "xslt": ["application/xslt+xml", "application/xml", "text/xml"], "mht": ["multipart/related"], "mhtml": ["multipart/related"],
        "hta": ["application/hta"],
    ]

    /// The extension a file of each type is given when its own does not agree.
    static let typeExtensions: [String: String] = [
        "image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp", "image/heic": "heic", "image/heif": "heif",
        "video/mp4": "mp4", "video/quicktime": "mov", "application/pdf": "pdf", "text/plain": "txt", "application/json": "json",
        "application/zip": "zip",
    ]

    /// What a file's extension says it is, for clients that send no type (or octet-stream).
    public static func type(byExtensionOf filename: String) -> String? {
        fileExtension(of: filename).flatMap { extensionTypes[$0]?.first }
    }

    /// `filename`, made to agree with `contentType`: a name whose extension stands for another
    /// type (`x.html`, `x.svg`, `x.png` sent as `text/plain`) gets the type's own extension after
    /// it (`x.html.txt`), so a file saved from the app opens as what it was checked and served
    /// as, never as a page or a script. Names without an extension, or with one we do not know,
    /// are left as they are.
    public static func filename(_ filename: String, agreeingWith contentType: String) -> String {
        let type = mediaType(contentType)
        guard let ext = fileExtension(of: filename), let types = extensionTypes[ext], !types.contains(type) else { return filename }
        return filename + "." + (typeExtensions[type] ?? "bin")
    }

    /// The lower-cased extension, nil when the name has none.
    static func fileExtension(of filename: String) -> String? {
        guard let dot = filename.lastIndex(of: "."), dot != filename.startIndex, filename.index(after: dot) != filename.endIndex else {
            return nil
        }
        return filename[filename.index(after: dot)...].lowercased()
    }

    /// A `Content-Disposition` value that every client reads the same: the name as RFC 5987's
    /// `filename*` (UTF-8, every byte outside `attr-char` percent-encoded), and for clients that
    /// know only `filename` an ASCII fallback in quotes with nothing that could end the quotes
    /// or the header (quotes, backslashes, control characters) and `_` for anything else.
    public static func contentDisposition(inline: Bool, filename: String) -> String {
        let fallback = String(
            filename.unicodeScalars.compactMap { scalar -> Character? in
                if scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\"" || scalar == "\\" { return nil }
                return scalar.isASCII ? Character(scalar) : "_"
            })
        let encoded = filename.utf8.map { byte in
            attrCharacters.contains(byte) ? String(UnicodeScalar(byte)) : "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
        }.joined()
        return "\(inline ? "inline" : "attachment"); filename=\"\(fallback.isEmpty ? "file" : fallback)\"; filename*=UTF-8''\(encoded)"
    }

    /// RFC 5987 `attr-char`: ALPHA / DIGIT / "!" / "#" / "$" / "&" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~".
    private static let attrCharacters = Set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$&+-.^_`|~".utf8)

    /// Types a browser would run as a page or a script (XML can carry either).
    static let runnableTypes: Set<String> = [
        "text/html", "application/xhtml+xml", "image/svg+xml", "text/javascript", "application/javascript", "application/x-javascript",
        "text/ecmascript", "application/ecmascript", "application/xml", "text/xml", "application/xslt+xml", "multipart/related",
        "application/hta", "text/xsl", "application/wasm",
    ]

    /// The type a file from Discord is served as: its own, unless a browser would run it (HTML,
    /// SVG, XHTML, JavaScript, any XML), which goes out as bytes to download, never as itself.
    public static func servedType(_ contentType: String?) -> String {
        let type = contentType.map(mediaType) ?? ""
        guard type.split(separator: "/").count == 2, !runnableTypes.contains(type), !type.hasSuffix("+xml") else {
            return "application/octet-stream"
        }
        return type
    }

    /// The media type without parameters, lower-cased (`Image/PNG; x=y` → `image/png`).
    public static func mediaType(_ contentType: String) -> String {
        String(contentType.prefix { $0 != ";" }).lowercased().filter { !$0.isWhitespace }
    }

    /// Whether `contentType` is on `allowed` (entries may be `type/*`).
    public static func isAllowed(_ contentType: String, in allowed: [String]) -> Bool {
        let type = mediaType(contentType)
        guard type.split(separator: "/").count == 2 else { return false }
        return allowed.contains { entry in
            let entry = mediaType(entry)
            if entry.hasSuffix("/*") { return type.hasPrefix(entry.dropLast()) }
            return entry == type
        }
    }

    /// The image type the bytes begin with (magic numbers), or nil when they are not one we know.
    public static func sniffedImageType(_ prefix: some Collection<UInt8>) -> String? {
        let bytes = Array(prefix.prefix(16))
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + magic.count && Array(bytes[offset..<(offset + magic.count)]) == magic
        }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return "image/gif" }
        if starts(Array("RIFF".utf8)), starts(Array("WEBP".utf8), at: 8) { return "image/webp" }
        if starts(Array("ftyp".utf8), at: 4) {
            let brand = String(decoding: bytes.dropFirst(8).prefix(4), as: UTF8.self)
            if ["heic", "heix", "hevc", "hevx"].contains(brand) { return "image/heic" }
            if ["mif1", "msf1"].contains(brand) { return "image/heif" }
        }
        return nil
    }

    /// Whether bytes declared as `contentType` may go out as that: an image must begin like one
    /// of its kind (HEIC and HEIF share a container and are taken for each other).
    public static func contentMatches(_ contentType: String, prefix: some Collection<UInt8>) -> Bool {
        let declared = mediaType(contentType)
        guard declared.hasPrefix("image/") else { return true }
        guard let sniffed = sniffedImageType(prefix) else { return false }
        let family: Set<String> = ["image/heic", "image/heif"]
        return sniffed == declared || (family.contains(sniffed) && family.contains(declared))
    }
}
