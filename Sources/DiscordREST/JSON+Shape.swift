import Foundation

extension JSON {
    /// How big a document is, read from its bytes without building anything: the deepest nesting
    /// of objects and arrays, and an upper bound of the values it holds (every container, plus one
    /// per separator). Strings are skipped with their escapes, so brackets inside them do not count.
    public struct Shape: Sendable, Hashable {
        public var depth = 0
        public var values = 0
    }

    public static func shape(of bytes: Data) -> Shape {
        var shape = Shape()
        var depth = 0
        var inString = false
        var escaped = false
        var sawValue = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                sawValue = true
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                shape.depth = max(shape.depth, depth)
                shape.values += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth = max(0, depth - 1)
            case UInt8(ascii: ","), UInt8(ascii: ":"):
                shape.values += 1
            case 0x20, 0x09, 0x0A, 0x0D:
                break
            default:
                sawValue = true
            }
        }
        if sawValue { shape.values += 1 }
        return shape
    }
}

extension JSON {
    /// Nesting depth and number of values of a parsed document, counted the way `shape(of:)` bounds them.
    public var measured: Shape {
        switch self {
        case .object(let members):
            var shape = Shape(depth: 1, values: 1)
            for value in members.values {
                let inner = value.measured
                shape.depth = max(shape.depth, inner.depth + 1)
                shape.values += inner.values
            }
            return shape
        case .array(let elements):
            var shape = Shape(depth: 1, values: 1)
            for value in elements {
                let inner = value.measured
                shape.depth = max(shape.depth, inner.depth + 1)
                shape.values += inner.values
            }
            return shape
        default:
            return Shape(depth: 0, values: 1)
        }
    }
}
