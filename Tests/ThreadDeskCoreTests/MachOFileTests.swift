import Foundation
import Testing
import TestSupport
import ThreadDeskCore

@Suite("Mach-O slices")
struct MachOFileTests {
    static let uuid = "6C2F7D3E-9A41-4B1C-8E55-0D3A2B1C4F60"

    /// A thin image: a header, `__TEXT` at `text`, and an `LC_UUID` when `uuid` is given.
    static func thin(
        uuid: String? = MachOFileTests.uuid, cpu: UInt32 = 0x0100_000C, subtype: UInt32 = 0, text: UInt64 = 0x1_0000_0000,
        is64: Bool = true, bigEndian: Bool = false, fileType: UInt32 = 10
    ) -> [UInt8] {
        var commands: [UInt8] = []
        // LC_SEGMENT_64 (72 bytes) or LC_SEGMENT (56).
        commands += word(is64 ? 0x19 : 0x1, bigEndian) + word(is64 ? 72 : 56, bigEndian)
        commands += Array("__TEXT".utf8) + Array(repeating: 0, count: 10)
        commands += is64 ? quad(text, bigEndian) + quad(0x4000, bigEndian) + quad(0, bigEndian) + quad(0x4000, bigEndian)
            : word(UInt32(text), bigEndian) + word(0x4000, bigEndian) + word(0, bigEndian) + word(0x4000, bigEndian)
        commands += word(5, bigEndian) + word(5, bigEndian) + word(0, bigEndian) + word(0, bigEndian)
        var count: UInt32 = 1
        if let uuid {
            commands += word(0x1B, bigEndian) + word(24, bigEndian)
            let hex = Array(uuid.filter { $0 != "-" })
            commands += stride(from: 0, to: 32, by: 2).map { UInt8(String(hex[$0...$0 + 1]), radix: 16)! }
            count += 1
        }
        let magic: UInt32 = is64 ? 0xFEED_FACF : 0xFEED_FACE
        var header = word(magic, bigEndian) + word(cpu, bigEndian) + word(subtype, bigEndian) + word(fileType, bigEndian)
        header += word(count, bigEndian) + word(UInt32(commands.count), bigEndian) + word(0, bigEndian)
        if is64 { header += word(0, bigEndian) }
        return header + commands + Array(repeating: 0, count: 64)
    }

    static func word(_ value: UInt32, _ bigEndian: Bool) -> [UInt8] {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        return bigEndian ? bytes.reversed() : bytes
    }

    static func quad(_ value: UInt64, _ bigEndian: Bool) -> [UInt8] {
        let bytes = (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        return bigEndian ? bytes.reversed() : bytes
    }

    static func fat(_ slices: [(cpu: UInt32, subtype: UInt32, bytes: [UInt8])], wide: Bool = false) -> [UInt8] {
        var header = word(wide ? 0xCAFE_BABF : 0xCAFE_BABE, true) + word(UInt32(slices.count), true)
        var body: [UInt8] = []
        var offset = 0x1000
        for slice in slices {
            header += word(slice.cpu, true) + word(slice.subtype, true)
            header += wide ? quad(UInt64(offset), true) + quad(UInt64(slice.bytes.count), true) + word(12, true) + word(0, true)
                : word(UInt32(offset), true) + word(UInt32(slice.bytes.count), true) + word(12, true)
            body += Array(repeating: 0, count: offset - 0x1000 - body.count) + slice.bytes
            offset = 0x1000 + ((body.count + 0xFFF) & ~0xFFF)
        }
        return header + Array(repeating: 0, count: 0x1000 - header.count) + body
    }

    @Test func readsAThinImage() throws {
        let slices = try MachOFile.slices(of: Data(Self.thin()))
        #expect(slices == [MachOSlice(uuid: Self.uuid, arch: "arm64", textVMAddress: 0x1_0000_0000, fileType: 10)])
    }

    @Test func readsEitherByteOrderAndThirtyTwoBits() throws {
        let armv7 = try MachOFile.slices(of: Data(Self.thin(cpu: 12, subtype: 9, text: 0x4000, is64: false)))
        #expect(armv7.map(\.arch) == ["armv7"] && armv7.first?.textVMAddress == 0x4000)
        let big = try MachOFile.slices(of: Data(Self.thin(cpu: 0x0100_0007, text: 0x2000, bigEndian: true)))
        #expect(big == [MachOSlice(uuid: Self.uuid, arch: "x86_64", textVMAddress: 0x2000, fileType: 10)])
    }

    @Test func readsFatFilesAndLeavesSlicesWithoutAUUIDOut() throws {
        let other = "0B6E6A8C-3F7D-3A1C-9E2B-5D4C3B2A1908"
        for wide in [false, true] {
            let data = Self.fat([
                (0x0100_000C, 0, Self.thin()),
                (0x0100_000C, 2, Self.thin(uuid: other, subtype: 0x8000_0002)),
                (0x0100_0007, 3, Self.thin(uuid: nil, cpu: 0x0100_0007)),
            ], wide: wide)
            let slices = try MachOFile.slices(of: Data(data))
            #expect(slices.map(\.arch) == ["arm64", "arm64e"])
            #expect(slices.map(\.uuid) == [Self.uuid, other])
        }
    }

    @Test func anImageWithoutAUUIDHasNoSlice() throws {
        #expect(try MachOFile.slices(of: Data(Self.thin(uuid: nil))).isEmpty)
    }

    @Test func readsTheFixtureBuiltByClang() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("macho-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let fixture = try MachOFixture.build(in: directory)
        let slices = try MachOFile.slices(of: fixture.data)
        #expect(slices == [MachOSlice(uuid: MachOFixture.defaultUUID, arch: "arm64", textVMAddress: 0, fileType: 1)])
        #expect(fixture.functions["checkoutSubmit"] == 0)
        #expect(Set(fixture.functions.keys) == Set(MachOFixture.symbols.map(\.key)))
    }

    @Test func truncatedOrHostileFilesAreErrors() {
        let image = Self.thin()
        // Every prefix that cuts the load commands.
        for length in [0, 3, 4, 20, 31, 40, 80, 100, 120] {
            #expect(throws: MachOError.self, "\(length) bytes") { try MachOFile.slices(of: Data(image.prefix(length))) }
        }
        #expect(throws: MachOError.self) { try MachOFile.slices(of: Data("not a binary at all".utf8)) }
        // Counts that would make a reader loop or allocate: commands past the end, a command of size 0.
        var huge = image
        huge.replaceSubrange(16..<24, with: Self.word(0xFFFF_FFFF, false) + Self.word(0xFFFF_FFF0, false))
        #expect(throws: MachOError.self) { try MachOFile.slices(of: Data(huge)) }
        var zero = image
        zero.replaceSubrange(36..<40, with: Self.word(0, false))
        #expect(throws: MachOError.self) { try MachOFile.slices(of: Data(zero)) }
        // A fat file whose slice lies past the end, lists too many, or nests another fat file.
        var past = Self.fat([(0x0100_000C, 0, image)])
        past.replaceSubrange(16..<20, with: Self.word(0xFFFF_FF00, true))
        #expect(throws: MachOError.self) { try MachOFile.slices(of: Data(past)) }
        var many = Self.fat([(0x0100_000C, 0, image)])
        many.replaceSubrange(4..<8, with: Self.word(0x7FFF_FFFF, true))
        #expect(throws: MachOError.self) { try MachOFile.slices(of: Data(many)) }
        let nested = Self.fat([(0x0100_000C, 0, Self.fat([(0x0100_000C, 0, image)]))])
        #expect(throws: MachOError.self) { try MachOFile.slices(of: Data(nested)) }
        #expect(throws: MachOError.self) { try MachOFile.slices(of: Data(Self.fat([(0x0100_000C, 0, image)]).prefix(30))) }
    }
}
