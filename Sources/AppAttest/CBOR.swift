/// One CBOR data item (RFC 8949), as far as App Attest needs it: integers, byte and text
/// strings, arrays and maps. Floats and simple values are read and kept as `.other`, so a field
/// a newer OS adds never makes a whole object unreadable.
public indirect enum CBOR: Sendable, Hashable {
    case unsigned(UInt64)
    /// The integer `-1 - n`.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    /// Entries in the order they came (keys are not required to be unique or sorted here).
    case map([Entry])
    /// A float, `true`, `false`, `null` or another simple value: read past, never used.
    case other

    public struct Entry: Sendable, Hashable {
        public var key: CBOR
        public var value: CBOR

        public init(_ key: CBOR, _ value: CBOR) {
            self.key = key
            self.value = value
        }
    }

    /// The value under `key` in a map (the first, when a key repeats); nil for other items.
    public subscript(key: CBOR) -> CBOR? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key == key }?.value
    }

    public subscript(text: String) -> CBOR? { self[.text(text)] }

    public subscript(int: Int) -> CBOR? { self[CBOR(int)] }

    /// The item for a small integer.
    public init(_ int: Int) {
        self = int >= 0 ? .unsigned(UInt64(int)) : .negative(UInt64(-1 - int))
    }

    public var bytes: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        return nil
    }

    public var text: String? {
        if case .text(let text) = self { return text }
        return nil
    }

    public var array: [CBOR]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// The integer, when it fits an `Int`.
    public var int: Int? {
        switch self {
        case .unsigned(let value): value <= UInt64(Int.max) ? Int(value) : nil
        case .negative(let value): value <= UInt64(Int.max) ? -1 - Int(value) : nil
        default: nil
        }
    }
}

/// Why bytes are not a CBOR item this reader takes.
public enum CBORError: Error, Sendable, Hashable {
    /// The input ends inside an item.
    case truncated
    /// Bytes are left after the item.
    case trailingBytes
    /// Nested deeper than the reader's limit.
    case tooDeep
    /// More bytes or items than the reader's limit.
    case tooLarge
    /// Indefinite lengths, reserved additional information, or a break outside an indefinite item.
    case unsupported
    /// A text string that is not UTF-8.
    case invalidText
}

/// Reads CBOR within limits: the input's size, nesting depth and item count are all bounded, so
/// hostile input costs at most a few passes over bytes it sent. Only definite lengths (what
/// Apple's devices write); tags are read past to the item they tag.
public struct CBORReader: Sendable {
    public var maxBytes: Int
    public var maxDepth: Int
    public var maxItems: Int

    public init(maxBytes: Int = 64 * 1024, maxDepth: Int = 8, maxItems: Int = 4096) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
        self.maxItems = maxItems
    }

    /// Exactly one item, with nothing after it.
    public func read(_ bytes: some Collection<UInt8>) throws(CBORError) -> CBOR {
        let (item, used) = try readPrefix(bytes)
        guard used == bytes.count else { throw .trailingBytes }
        return item
    }

    /// The first item, and how many bytes it took (the rest is the caller's).
    public func readPrefix(_ bytes: some Collection<UInt8>) throws(CBORError) -> (item: CBOR, used: Int) {
        guard bytes.count <= maxBytes else { throw .tooLarge }
        var cursor = Cursor(bytes: Array(bytes), maxDepth: maxDepth, itemsLeft: maxItems)
        let item = try cursor.item(depth: 0)
        return (item, cursor.offset)
    }

    private struct Cursor {
        let bytes: [UInt8]
        let maxDepth: Int
        var itemsLeft: Int
        var offset = 0

        mutating func byte() throws(CBORError) -> UInt8 {
            guard offset < bytes.count else { throw .truncated }
            defer { offset += 1 }
            return bytes[offset]
        }

        /// The argument of a head: the value itself, or the length of what follows.
        mutating func argument(_ info: UInt8) throws(CBORError) -> UInt64 {
            switch info {
            case 0..<24: return UInt64(info)
            case 24, 25, 26, 27:
                let width = 1 << Int(info - 24)
                var value: UInt64 = 0
                for _ in 0..<width { value = value << 8 | UInt64(try byte()) }
                return value
            default: throw .unsupported
            }
        }

        /// A length that the rest of the input can hold (each item or byte takes at least a byte).
        mutating func length(_ info: UInt8) throws(CBORError) -> Int {
            let value = try argument(info)
            guard value <= UInt64(bytes.count - offset) else { throw .truncated }
            return Int(value)
        }

        mutating func take(_ count: Int) throws(CBORError) -> [UInt8] {
            guard count <= bytes.count - offset else { throw .truncated }
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }

        mutating func item(depth: Int) throws(CBORError) -> CBOR {
            guard depth <= maxDepth else { throw .tooDeep }
            guard itemsLeft > 0 else { throw .tooLarge }
            itemsLeft -= 1
            let head = try byte()
            let major = head >> 5
            let info = head & 0x1f
            switch major {
            case 0: return .unsigned(try argument(info))
            case 1: return .negative(try argument(info))
            case 2: return .bytes(try take(try length(info)))
            case 3:
                guard let text = String(validating: try take(try length(info)), as: UTF8.self) else { throw .invalidText }
                return .text(text)
            case 4:
                let count = try length(info)
                var items: [CBOR] = []
                items.reserveCapacity(min(count, 64))
                for _ in 0..<count { items.append(try item(depth: depth + 1)) }
                return .array(items)
            case 5:
                // Each entry takes at least two bytes.
                let count = try length(info)
                guard count <= (bytes.count - offset) / 2 else { throw .truncated }
                var entries: [CBOR.Entry] = []
                entries.reserveCapacity(min(count, 64))
                for _ in 0..<count {
                    let key = try item(depth: depth + 1)
                    entries.append(CBOR.Entry(key, try item(depth: depth + 1)))
                }
                return .map(entries)
            case 6:
                _ = try argument(info)
                return try item(depth: depth + 1)
            default:
                // Simple values and floats: their argument is their whole content.
                _ = try argument(info)
                return .other
            }
        }
    }
}
