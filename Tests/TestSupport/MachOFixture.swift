import Foundation

/// The sample app "MyShop" as a Mach-O with DWARF, built on Linux (`clang -target arm64-apple-ios17.0
/// -g -c`: an object, since nothing links for iOS here) and given an `LC_UUID` the way a linked
/// binary has one; and MetricKit payloads of it crashing and hanging, as a device writes them.
public enum MachOFixture {
    public static let defaultUUID = "6C2F7D3E-9A41-4B1C-8E55-0D3A2B1C4F60"

    /// The functions, by the names `build` keys their offsets with, and the Swift symbols their asm
    /// labels give them (so DWARF holds mangled names, as a Swift binary's does).
    public static let symbols: [(key: String, mangled: String?)] = [
        ("checkoutSubmit", "$s6MyShop12CheckoutViewV6submityyF"),
        ("checkoutTap", "$s6MyShop12CheckoutViewV9tapButtonyyF"),
        ("cartTotal", "$s6MyShop4CartV5totalSivg"),
        ("appMain", "$s6MyShop0aB3AppV5$mainyyFZ"),
        ("receipt_format", nil),
    ]

    /// `#line` makes DWARF name Swift files: `checkoutSubmit`'s crashing line is CheckoutView.swift:44.
    public static let source = #"""
        #line 40 "CheckoutView.swift"
        int checkoutSubmit(int *cart) __asm__("_$s6MyShop12CheckoutViewV6submityyF");
        int checkoutSubmit(int *cart) {
            int *item = cart ? cart + 1 : 0;
            int total = 0;
            total += *item;
            return total;
        }
        #line 60 "CheckoutView.swift"
        int checkoutTap(int *cart) __asm__("_$s6MyShop12CheckoutViewV9tapButtonyyF");
        int checkoutTap(int *cart) {
            int result = checkoutSubmit(cart);
            return result + 1;
        }
        #line 10 "Cart.swift"
        int cartTotal(int *cart) __asm__("_$s6MyShop4CartV5totalSivg");
        int cartTotal(int *cart) {
            return cart[0] + cart[1];
        }
        #line 5 "MyShopApp.swift"
        int appMain(void) __asm__("_$s6MyShop0aB3AppV5$mainyyFZ");
        int appMain(void) {
            return checkoutTap(0);
        }
        #line 1 "Receipt.c"
        int receipt_format(int value) {
            return value * 3 + 7;
        }
        """#

    public struct FixtureError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Builds "MyShop" with `uuid`; `functions`: each function's offset from the start of
    /// `__TEXT,__text` (its address, the object's segment starting at 0).
    public static func build(uuid: String = defaultUUID, in directory: URL) throws -> (file: URL, data: Data, functions: [String: UInt64]) {
        guard let clang = locateClang() else { throw FixtureError(description: "no clang beside swift or on PATH") }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let sourceURL = directory.appendingPathComponent("MyShop.c")
        let objectURL = directory.appendingPathComponent("MyShop.o")
        try Data(source.utf8).write(to: sourceURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: clang)
        process.arguments = [
            "-target", "arm64-apple-ios17.0", "-g", "-O0", "-fdebug-compilation-dir=/Users/dev/MyShop",
            "-c", sourceURL.path, "-o", objectURL.path,
        ]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw FixtureError(description: "clang failed (\(process.terminationStatus))") }
        let object = try Data(contentsOf: objectURL)
        let data = try withUUID(object, uuid: uuid)
        let file = directory.appendingPathComponent("MyShop")
        try data.write(to: file)
        let defined = try definedSymbols(data)
        var functions: [String: UInt64] = [:]
        for (key, mangled) in symbols {
            if let value = defined["_" + (mangled ?? key)] { functions[key] = value }
        }
        return (file, data, functions)
    }

    /// clang beside `swift` (the toolchain's), else on PATH.
    public static func locateClang() -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        var candidates = ["/opt/swift/usr/bin/clang"]
        for directory in paths where FileManager.default.isExecutableFile(atPath: directory + "/swift") {
            candidates.insert(directory + "/clang", at: 0)
        }
        candidates += paths.map { $0 + "/clang" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    // MARK: - LC_UUID

    /// `object` with a 24-byte `LC_UUID` after its load commands; every file offset past them moves
    /// by 24 (segments and their sections, relocations, the symbol tables, linkedit data).
    public static func withUUID(_ object: Data, uuid: String) throws -> Data {
        var bytes = [UInt8](object)
        guard bytes.count >= 32, read32(bytes, 0) == 0xFEED_FACF else { throw FixtureError(description: "not a 64-bit little-endian Mach-O") }
        let uuidBytes = try parseUUID(uuid)
        let count = Int(read32(bytes, 16)), size = Int(read32(bytes, 20))
        let boundary = 32 + size
        let shift: UInt32 = 24
        func bump32(_ at: Int) { if read32(bytes, at) >= UInt32(boundary) { write32(&bytes, at, read32(bytes, at) + shift) } }
        func bump64(_ at: Int) { if read64(bytes, at) >= UInt64(boundary) { write64(&bytes, at, read64(bytes, at) + UInt64(shift)) } }
        var offset = 32
        for _ in 0..<count {
            let command = read32(bytes, offset), commandSize = Int(read32(bytes, offset + 4))
            switch command {
            case 0x19:  // LC_SEGMENT_64: fileoff, then each section's offset and reloff
                bump64(offset + 40)
                for section in 0..<Int(read32(bytes, offset + 64)) {
                    let at = offset + 72 + section * 80
                    bump32(at + 48)
                    bump32(at + 56)
                }
            case 0x2:  // LC_SYMTAB: symoff, stroff
                bump32(offset + 8)
                bump32(offset + 16)
            case 0xB:  // LC_DYSYMTAB: tocoff, modtaboff, extrefsymoff, indirectsymoff, extreloff, locreloff
                for field in [32, 40, 48, 56, 64, 72] { bump32(offset + field) }
            case 0x1D, 0x1E, 0x26, 0x29, 0x2B, 0x2E, 0x8000_0033, 0x8000_0034:  // linkedit data: dataoff
                bump32(offset + 8)
            default: break
            }
            offset += commandSize
        }
        var command = [UInt8](repeating: 0, count: 24)
        write32(&command, 0, 0x1B)
        write32(&command, 4, 24)
        command.replaceSubrange(8..<24, with: uuidBytes)
        bytes.insert(contentsOf: command, at: boundary)
        write32(&bytes, 16, UInt32(count + 1))
        write32(&bytes, 20, UInt32(size + 24))
        return Data(bytes)
    }

    /// External symbols defined in a section, by name, with their addresses.
    static func definedSymbols(_ data: Data) throws -> [String: UInt64] {
        let bytes = [UInt8](data)
        var offset = 32
        for _ in 0..<Int(read32(bytes, 16)) {
            if read32(bytes, offset) == 0x2 {
                let symbolOffset = Int(read32(bytes, offset + 8)), symbolCount = Int(read32(bytes, offset + 12))
                let stringOffset = Int(read32(bytes, offset + 16))
                var result: [String: UInt64] = [:]
                for index in 0..<symbolCount {
                    let entry = symbolOffset + index * 16
                    guard bytes[entry + 4] & 0x0E == 0x0E else { continue }  // N_SECT
                    let nameStart = stringOffset + Int(read32(bytes, entry))
                    let nameEnd = bytes[nameStart...].firstIndex(of: 0) ?? bytes.count
                    result[String(decoding: bytes[nameStart..<nameEnd], as: UTF8.self)] = read64(bytes, entry + 8)
                }
                return result
            }
            offset += Int(read32(bytes, offset + 4))
        }
        throw FixtureError(description: "no LC_SYMTAB")
    }

    static func parseUUID(_ text: String) throws -> [UInt8] {
        let hex = Array(text.filter { $0 != "-" })
        guard hex.count == 32 else { throw FixtureError(description: "not a UUID: \(text)") }
        return try stride(from: 0, to: 32, by: 2).map { index in
            guard let byte = UInt8(String(hex[index...index + 1]), radix: 16) else { throw FixtureError(description: "not a UUID: \(text)") }
            return byte
        }
    }

    static func read32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * $1) }
    }

    static func read64(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) }
    }

    static func write32(_ bytes: inout [UInt8], _ at: Int, _ value: UInt32) {
        for index in 0..<4 { bytes[at + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }

    static func write64(_ bytes: inout [UInt8], _ at: Int, _ value: UInt64) {
        for index in 0..<8 { bytes[at + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }
}
