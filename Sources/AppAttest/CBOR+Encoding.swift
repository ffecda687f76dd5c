extension CBOR {
    /// The item in CBOR's preferred (shortest) encoding, definite lengths; `.other` as `null`.
    /// For attesters in tests and for round trips, not a canonical encoding of maps.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        append(to: &out)
        return out
    }

    private func append(to out: inout [UInt8]) {
        func head(_ major: UInt8, _ value: UInt64) {
            switch value {
            case 0..<24: out.append(major << 5 | UInt8(value))
            case 24...0xff: out += [major << 5 | 24, UInt8(value)]
            case 0x100...0xffff: out.append(major << 5 | 25); out += bigEndian(value, 2)
            case 0x10000...0xffff_ffff: out.append(major << 5 | 26); out += bigEndian(value, 4)
            default: out.append(major << 5 | 27); out += bigEndian(value, 8)
            }
        }
        switch self {
        case .unsigned(let value): head(0, value)
        case .negative(let value): head(1, value)
        case .bytes(let bytes):
            head(2, UInt64(bytes.count))
            out += bytes
        case .text(let text):
            head(3, UInt64(text.utf8.count))
            out += text.utf8
        case .array(let items):
            head(4, UInt64(items.count))
            for item in items { item.append(to: &out) }
        case .map(let entries):
            head(5, UInt64(entries.count))
            for entry in entries {
                entry.key.append(to: &out)
                entry.value.append(to: &out)
            }
        case .other: out.append(0xf6)
        }
    }
}

private func bigEndian(_ value: UInt64, _ width: Int) -> [UInt8] {
    (0..<width).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
}
