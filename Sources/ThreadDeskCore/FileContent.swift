/// Whether a file's bytes are what its declared type says, for every type ThreadDesk accepts by
/// default. A file goes to Discord, and back out to other clients under the type it was checked
/// as, so a type taken on the client's word would let a PDF travel as `application/json`.
///
/// Every check reads the bytes once, in place, with fixed memory: no copy of a large file, no tree
/// of a JSON document (its nesting is bounded by `jsonDepthLimit`).
public enum FileContent {
    /// How deeply a JSON file may nest arrays and objects.
    public static let jsonDepthLimit = 64

    /// The types with a rule of their own; any other type an operator allows is checked by nothing.
    public static let checkedTypes: Set<String> = [
        "image/png", "image/jpeg", "image/gif", "image/webp", "image/heic", "image/heif", "application/pdf", "application/zip",
        "video/mp4", "video/quicktime", "application/json", "text/plain",
    ]

    /// Whether `bytes` may go out as `contentType`: true for a type without a rule.
    public static func matches(_ contentType: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        let type = AttachmentRules.mediaType(contentType)
        switch type {
        case _ where type.hasPrefix("image/"):
            return AttachmentRules.contentMatches(type, prefix: bytes.prefix(16))
        case "application/pdf":
            return starts(bytes, with: pdf)
        case "application/zip":
            return starts(bytes, with: zipLocalFile) || starts(bytes, with: zipEndOfDirectory)
        case "video/mp4", "video/quicktime":
            // One container for both (QuickTime's is MP4's ancestor); HEIC and HEIF images use it too.
            return isISOMedia(bytes) && AttachmentRules.sniffedImageType(bytes.prefix(16)) == nil
        case "application/json":
            return isJSON(bytes)
        case "text/plain":
            return isPlainText(bytes)
        default:
            return true
        }
    }

    /// What the bytes look like, for a refusal's message; nil when none of the checked types.
    public static func sniff(_ bytes: UnsafeRawBufferPointer) -> String? {
        if let image = AttachmentRules.sniffedImageType(bytes.prefix(16)) { return image }
        if starts(bytes, with: pdf) { return "application/pdf" }
        if starts(bytes, with: zipLocalFile) || starts(bytes, with: zipEndOfDirectory) { return "application/zip" }
        if isISOMedia(bytes) { return bytes.count >= 12 && Array(bytes[8..<12]) == Array("qt  ".utf8) ? "video/quicktime" : "video/mp4" }
        if isJSON(bytes) { return "application/json" }
        if isPlainText(bytes) { return "text/plain" }
        return nil
    }

    private static let pdf = Array("%PDF-".utf8)
    private static let zipLocalFile: [UInt8] = [0x50, 0x4B, 0x03, 0x04]
    private static let zipEndOfDirectory: [UInt8] = [0x50, 0x4B, 0x05, 0x06]
    /// Top-level box types an MP4 or QuickTime file begins with.
    private static let mediaBoxes: Set<[UInt8]> = Set(
        ["ftyp", "moov", "mdat", "free", "skip", "wide", "pnot", "uuid", "pdin", "styp", "sidx", "moof"].map { Array($0.utf8) })

    private static func starts(_ bytes: UnsafeRawBufferPointer, with magic: [UInt8]) -> Bool {
        bytes.count >= magic.count && bytes.prefix(magic.count).elementsEqual(magic)
    }

    /// An ISO base media file (MP4, QuickTime): a known box type at offset 4, after a size that is
    /// 0 (to the end), 1 (a 64-bit size follows) or at least the box's 8-byte header.
    static func isISOMedia(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 8, mediaBoxes.contains(Array(bytes[4..<8])) else { return false }
        let size = bytes.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return size == 0 || size == 1 || size >= 8
    }

    /// Valid UTF-8 without NUL bytes (checked in place: no string is made of the file).
    static func isPlainText(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var reader = JSONValidator(bytes: bytes)
        while let byte = reader.current {
            if byte == 0 { return false }
            if byte < 0x80 {
                reader.index += 1
            } else if !reader.utf8Scalar() {
                return false
            }
        }
        return true
    }

    /// One JSON value (RFC 8259) in UTF-8, with whitespace around it, nested at most
    /// `jsonDepthLimit` deep. A validator, not a parser: it keeps the open containers' kinds
    /// (at most the limit) and nothing else.
    static func isJSON(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var reader = JSONValidator(bytes: bytes)
        return reader.validate()
    }
}

/// The state machine of `FileContent.isJSON`.
private struct JSONValidator {
    let bytes: UnsafeRawBufferPointer
    var index = 0
    /// Whether each open container is an object (true) or an array.
    var containers: [Bool] = []

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        containers.reserveCapacity(FileContent.jsonDepthLimit)
    }

    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    mutating func validate() -> Bool {
        // A byte-order mark is not JSON's (RFC 8259 §8.1), but editors write one: accepted.
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        skipWhitespace()
        guard value() else { return false }
        // After each value: a comma and the next, or the container's end.
        while let isObject = containers.last {
            skipWhitespace()
            guard let byte = current else { return false }
            index += 1
            if byte == UInt8(ascii: ",") {
                skipWhitespace()
                if isObject {
                    guard member() else { return false }
                } else {
                    guard value() else { return false }
                }
            } else if byte == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                containers.removeLast()
            } else {
                return false
            }
        }
        skipWhitespace()
        return index == bytes.count
    }

    /// An object's `"key": value`, its value opening a container or complete.
    mutating func member() -> Bool {
        guard current == UInt8(ascii: "\""), string() else { return false }
        skipWhitespace()
        guard current == UInt8(ascii: ":") else { return false }
        index += 1
        skipWhitespace()
        return value()
    }

    /// A scalar, or the opening of a container (and its first element when not empty).
    mutating func value() -> Bool {
        guard let byte = current else { return false }
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard containers.count < FileContent.jsonDepthLimit else { return false }
            let isObject = byte == UInt8(ascii: "{")
            index += 1
            skipWhitespace()
            if current == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                index += 1
                return true
            }
            containers.append(isObject)
            return isObject ? member() : value()
        case UInt8(ascii: "\""):
            return string()
        case UInt8(ascii: "t"):
            return literal("true")
        case UInt8(ascii: "f"):
            return literal("false")
        case UInt8(ascii: "n"):
            return literal("null")
        default:
            return number()
        }
    }

    mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { return false }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
        index += count
        return true
    }

    mutating func digits() -> Int {
        let start = index
        while let byte = current, (0x30...0x39).contains(byte) { index += 1 }
        return index - start
    }

    mutating func number() -> Bool {
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else if let byte = current, (0x31...0x39).contains(byte) {
            _ = digits()
        } else {
            return false
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return false }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return false }
        }
        return true
    }

    /// A string from its opening quote: escapes checked, control characters refused, UTF-8 valid
    /// (no overlong forms, surrogates or values past U+10FFFF), a `\u` surrogate only in a pair.
    mutating func string() -> Bool {
        index += 1
        while let byte = current {
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return true
            case UInt8(ascii: "\\"):
                index += 1
                guard let escaped = current else { return false }
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    continue
                case UInt8(ascii: "u"):
                    guard let unit = hex4() else { return false }
                    if (0xDC00...0xDFFF).contains(unit) { return false }
                    if (0xD800...0xDBFF).contains(unit) {
                        guard current == UInt8(ascii: "\\") else { return false }
                        index += 1
                        guard current == UInt8(ascii: "u") else { return false }
                        index += 1
                        guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return false }
                    }
                default:
                    return false
                }
            case 0x00..<0x20:
                return false
            case 0x20..<0x80:
                index += 1
            default:
                guard utf8Scalar() else { return false }
            }
        }
        return false
    }

    mutating func hex4() -> UInt32? {
        guard bytes.count - index >= 4 else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case 0x41...0x46: digit = byte - 0x41 + 10
            case 0x61...0x66: digit = byte - 0x61 + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// One multi-byte UTF-8 sequence, well formed (Unicode's table 3-7).
    mutating func utf8Scalar() -> Bool {
        let lead = bytes[index]
        let (count, low, high): (Int, UInt8, UInt8) =
            switch lead {
            case 0xC2...0xDF: (1, 0x80, 0xBF)
            case 0xE0: (2, 0xA0, 0xBF)
            case 0xE1...0xEC, 0xEE...0xEF: (2, 0x80, 0xBF)
            case 0xED: (2, 0x80, 0x9F)
            case 0xF0: (3, 0x90, 0xBF)
            case 0xF1...0xF3: (3, 0x80, 0xBF)
            case 0xF4: (3, 0x80, 0x8F)
            default: (0, 0, 0)
            }
        guard count > 0, bytes.count - index > count else { return false }
        guard (low...high).contains(bytes[index + 1]) else { return false }
        for offset in stride(from: 2, through: count, by: 1) where !(0x80...0xBF).contains(bytes[index + offset]) { return false }
        index += count + 1
        return true
    }
}
