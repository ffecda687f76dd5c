import Foundation

/// One architecture's image in a Mach-O file (a dSYM's DWARF file holds one per architecture).
public struct MachOSlice: Sendable, Hashable {
    /// Uppercase 8-4-4-4-12, as a MetricKit frame names its binary.
    public var uuid: String
    /// "arm64", "arm64e", "x86_64", "armv7"…: what `llvm-symbolizer --default-arch` takes.
    public var arch: String
    /// The `__TEXT` segment's vmaddr, which a frame's offset counts from; 0 when there is none (an
    /// object file: its one segment starts at 0).
    public var textVMAddress: UInt64
    /// `MH_EXECUTE` (2), `MH_DYLIB` (6), `MH_DSYM` (10), `MH_OBJECT` (1)…
    public var fileType: UInt32

    public init(uuid: String, arch: String, textVMAddress: UInt64, fileType: UInt32) {
        self.uuid = uuid
        self.arch = arch
        self.textVMAddress = textVMAddress
        self.fileType = fileType
    }
}

/// Why a file is not a Mach-O this reader takes.
public struct MachOError: Error, Sendable, Hashable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { reason }
}

/// Reads the slices of a Mach-O file: thin (32 or 64 bits, either byte order) or fat (`0xcafebabe`,
/// `0xcafebabf`). The file is an upload: every offset and count is checked against the bytes there
/// are before it is used, and nothing is allocated by what a count says.
public enum MachOFile {
    /// Slices kept from one fat file (Apple's hold a handful).
    public static let maxSlices = 32

    /// The slices that carry an `LC_UUID` (those without cannot be matched to a report).
    public static func slices(of data: Data) throws(MachOError) -> [MachOSlice] {
        let result: Result<[MachOSlice], MachOError> = data.withUnsafeBytes { buffer in
            do throws(MachOError) {
                return .success(try slices(in: MachOBytes(buffer: buffer)))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    static func slices(in bytes: MachOBytes) throws(MachOError) -> [MachOSlice] {
        guard let magic = bytes.uint32(at: 0, bigEndian: true) else {
            throw MachOError("The file is too short to be a Mach-O file.")
        }
        guard magic == 0xCAFE_BABE || magic == 0xCAFE_BABF else {
            return try slice(in: bytes, at: 0, size: bytes.count).map { [$0] } ?? []
        }
        let wide = magic == 0xCAFE_BABF
        guard let count = bytes.uint32(at: 4, bigEndian: true) else {
            throw MachOError("The fat header is cut short.")
        }
        guard count > 0, count <= maxSlices else {
            throw MachOError("The fat header lists \(count) architectures (1 to \(maxSlices) are read).")
        }
        let entrySize = wide ? 32 : 20
        var slices: [MachOSlice] = []
        for index in 0..<Int(count) {
            let entry = 8 + index * entrySize
            let offset: UInt64?, size: UInt64?
            if wide {
                offset = bytes.uint64(at: entry + 8, bigEndian: true)
                size = bytes.uint64(at: entry + 16, bigEndian: true)
            } else {
                offset = bytes.uint32(at: entry + 8, bigEndian: true).map(UInt64.init)
                size = bytes.uint32(at: entry + 12, bigEndian: true).map(UInt64.init)
            }
            guard let offset, let size else {
                throw MachOError("The fat header is cut short (architecture \(index + 1) of \(count)).")
            }
            guard offset <= UInt64(bytes.count), size <= UInt64(bytes.count) - offset else {
                throw MachOError("Architecture \(index + 1) of \(count) lies past the end of the file.")
            }
            let sliceBytes = MachOBytes(buffer: bytes.window(Int(offset), Int(size)))
            if let magic = sliceBytes.uint32(at: 0, bigEndian: true), magic == 0xCAFE_BABE || magic == 0xCAFE_BABF {
                throw MachOError("Architecture \(index + 1) of \(count) is itself a fat file.")
            }
            if let slice = try slice(in: sliceBytes, at: 0, size: sliceBytes.count) {
                slices.append(slice)
            }
        }
        return slices
    }

    /// A thin image: its header, then its load commands, read for `LC_UUID` and the `__TEXT` segment.
    static func slice(in bytes: MachOBytes, at base: Int, size: Int) throws(MachOError) -> MachOSlice? {
        guard let raw = bytes.uint32(at: base, bigEndian: false) else {
            throw MachOError("The file is too short to be a Mach-O file.")
        }
        let is64: Bool, bigEndian: Bool
        switch raw {
        case 0xFEED_FACE: (is64, bigEndian) = (false, false)
        case 0xFEED_FACF: (is64, bigEndian) = (true, false)
        case 0xCEFA_EDFE: (is64, bigEndian) = (false, true)
        case 0xCFFA_EDFE: (is64, bigEndian) = (true, true)
        default: throw MachOError("The file is not a Mach-O file (magic 0x\(String(raw, radix: 16))).")
        }
        func u32(_ offset: Int) -> UInt32? { bytes.uint32(at: base + offset, bigEndian: bigEndian) }
        let headerSize = is64 ? 32 : 28
        guard size >= headerSize, let cpuType = u32(4), let cpuSubtype = u32(8), let fileType = u32(12),
            let commandCount = u32(16), let commandsSize = u32(20)
        else { throw MachOError("The Mach-O header is cut short.") }
        guard Int(commandsSize) <= size - headerSize, Int(commandCount) <= Int(commandsSize) / 8 else {
            throw MachOError("The Mach-O load commands run past the end of the file.")
        }
        var uuid: String?
        var textVMAddress: UInt64 = 0
        var offset = headerSize
        let end = headerSize + Int(commandsSize)
        for _ in 0..<Int(commandCount) {
            guard let command = u32(offset), let commandSize = u32(offset + 4), commandSize >= 8,
                Int(commandSize) <= end - offset
            else { throw MachOError("A Mach-O load command is cut short or runs past the others.") }
            switch command {
            case 0x1B:  // LC_UUID
                guard commandSize >= 24, let raw = bytes.bytes(at: base + offset + 8, count: 16) else {
                    throw MachOError("The Mach-O LC_UUID command is cut short.")
                }
                uuid = Self.uuid(raw)
            case 0x19, 0x1:  // LC_SEGMENT_64, LC_SEGMENT
                guard commandSize >= (command == 0x19 ? 72 : 56), let name = bytes.bytes(at: base + offset + 8, count: 16) else {
                    throw MachOError("A Mach-O segment command is cut short.")
                }
                if name.prefix(7).elementsEqual(Array("__TEXT\0".utf8)) {
                    let address = command == 0x19
                        ? bytes.uint64(at: base + offset + 24, bigEndian: bigEndian)
                        : bytes.uint32(at: base + offset + 24, bigEndian: bigEndian).map(UInt64.init)
                    textVMAddress = address ?? 0
                }
            default: break
            }
            offset += Int(commandSize)
        }
        guard let uuid else { return nil }
        return MachOSlice(uuid: uuid, arch: archName(cpuType: cpuType, subtype: cpuSubtype), textVMAddress: textVMAddress, fileType: fileType)
    }

    static func uuid(_ bytes: [UInt8]) -> String {
        var text = ""
        for (index, byte) in bytes.enumerated() {
            if [4, 6, 8, 10].contains(index) { text += "-" }
            let hex = String(byte, radix: 16, uppercase: true)
            text += byte < 16 ? "0" + hex : hex
        }
        return text
    }

    /// `<mach/machine.h>`'s names, as `llvm-symbolizer` and Xcode spell them.
    public static func archName(cpuType: UInt32, subtype: UInt32) -> String {
        let sub = subtype & 0x00FF_FFFF
        switch cpuType {
        case 0x0100_000C: return sub == 2 ? "arm64e" : "arm64"
        case 0x0200_000C: return "arm64_32"
        case 0x0100_0007: return sub == 8 ? "x86_64h" : "x86_64"
        case 7: return "i386"
        case 12:
            let names: [UInt32: String] = [6: "armv6", 9: "armv7", 10: "armv7f", 11: "armv7s", 12: "armv7k", 13: "armv8", 14: "armv6m", 15: "armv7m", 16: "armv7em"]
            return names[sub] ?? "arm"
        default: return "cpu\(cpuType)"
        }
    }
}

/// Bytes read with a bound check on every access: nil past the end, never a trap.
struct MachOBytes {
    let buffer: UnsafeRawBufferPointer

    var count: Int { buffer.count }

    func window(_ offset: Int, _ size: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + size])
    }

    func bytes(at offset: Int, count: Int) -> [UInt8]? {
        guard offset >= 0, count >= 0, offset <= buffer.count - count else { return nil }
        return Array(buffer[offset..<offset + count])
    }

    func uint32(at offset: Int, bigEndian: Bool) -> UInt32? {
        guard offset >= 0, offset <= buffer.count - 4 else { return nil }
        let value = buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        return bigEndian ? UInt32(bigEndian: value) : UInt32(littleEndian: value)
    }

    func uint64(at offset: Int, bigEndian: Bool) -> UInt64? {
        guard offset >= 0, offset <= buffer.count - 8 else { return nil }
        let value = buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        return bigEndian ? UInt64(bigEndian: value) : UInt64(littleEndian: value)
    }
}
