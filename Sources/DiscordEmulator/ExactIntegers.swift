import Foundation

/// Stock libraries send snowflakes as JSON numbers (disnake's `applied_tags`, hikari's ids), and
/// Discord reads them exactly; the shared JSON type keeps numbers as doubles, which round any id
/// past 2^53. Before a body is parsed, every integer literal a double cannot hold exactly becomes
/// a string of the same digits, which the snowflake readers take as they take a string id.
enum ExactIntegers {
    /// `body` with each inexact integer literal outside strings quoted; everything else byte for
    /// byte (malformed JSON stays malformed, for the parser to refuse). One pass, no backtracking.
    static func quotingInexact(_ body: Data) -> Data {
        let bytes = [UInt8](body)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 16)
        var index = 0
        var inString = false
        var escaped = false
        while index < bytes.count {
            let byte = bytes[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                output.append(byte)
                index += 1
            } else if byte == UInt8(ascii: "\"") {
                inString = true
                output.append(byte)
                index += 1
            } else if byte == UInt8(ascii: "-") || isDigit(byte) {
                var end = index + 1
                while end < bytes.count, isNumberByte(bytes[end]) { end += 1 }
                let token = bytes[index..<end]
                if isInexactInteger(token) {
                    output.append(UInt8(ascii: "\""))
                    output.append(contentsOf: token)
                    output.append(UInt8(ascii: "\""))
                } else {
                    output.append(contentsOf: token)
                }
                index = end
            } else {
                output.append(byte)
                index += 1
            }
        }
        return Data(output)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    private static func isNumberByte(_ byte: UInt8) -> Bool {
        isDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }

    /// An optional minus and digits only, whose value a double would round.
    private static func isInexactInteger(_ token: ArraySlice<UInt8>) -> Bool {
        let digits = token.first == UInt8(ascii: "-") ? token.dropFirst() : token
        guard digits.count >= 16, digits.count <= 20, digits.allSatisfy(isDigit) else { return false }
        let text = String(decoding: token, as: UTF8.self)
        if let value = UInt64(text) { return UInt64(exactly: Double(value)) != value }
        if let value = Int64(text) { return Int64(exactly: Double(value)) != value }
        return false
    }
}
