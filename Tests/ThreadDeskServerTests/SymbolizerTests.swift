import Foundation
import Testing
import TestSupport
import ThreadDeskCore
import ZIPFoundation

@testable import ThreadDeskServer

@Suite("Symbolizer and dSYM archives")
struct SymbolizerTests {
    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("symbolizer-tests-\(UUID().uuidString)")
    }

    /// Every llvm-symbolizer here: the toolchain's and the system's read the same fixture.
    static var symbolizers: [String] {
        var found = Set<String>()
        return [Symbolizer.locate(), "/opt/swift/usr/bin/llvm-symbolizer", "/usr/bin/llvm-symbolizer"].compactMap { $0 }
            .filter { FileManager.default.isExecutableFile(atPath: $0) && found.insert($0).inserted }
    }

    @Test func namesTheFixturesFramesWithLinesAndDemangledSwift() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fixture = try MachOFixture.build(in: directory)
        let slice = try #require(try MachOFile.slices(of: fixture.data).first)
        let submit = try #require(fixture.functions["checkoutSubmit"]), tap = try #require(fixture.functions["checkoutTap"])
        let receipt = try #require(fixture.functions["receipt_format"])
        #expect(!Self.symbolizers.isEmpty)
        for path in Self.symbolizers {
            let symbolizer = Symbolizer(path: path)
            let frames = try await symbolizer.symbolicate([submit + 0x10, tap + 0x8, receipt + 0x4, 0x10_0000, submit + 0x10], in: fixture.file, slice: slice)
            #expect(frames.count == 5)
            let top = try #require(frames[0], "\(path)")
            #expect(top.function == "MyShop.CheckoutView.submit() -> ()")
            #expect(top.file?.hasSuffix("/CheckoutView.swift") == true)
            #expect((41...46).contains(top.line ?? 0), "line \(top.line ?? 0)")
            #expect(frames[1]?.function == "MyShop.CheckoutView.tapButton() -> ()")
            #expect((61...63).contains(frames[1]?.line ?? 0))
            #expect(frames[2]?.function == "receipt_format" && frames[2]?.file?.hasSuffix("Receipt.c") == true)
            #expect(frames[3] == nil, "an address the DWARF does not know")
            #expect(frames[4] == frames[0])
        }
    }

    @Test func answersAgainFromItsCache() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fixture = try MachOFixture.build(in: directory)
        let slice = try #require(try MachOFile.slices(of: fixture.data).first)
        let symbolizer = Symbolizer(path: try #require(Symbolizer.locate()))
        let first = try await symbolizer.symbolicate([0x8, 0x10_0000], in: fixture.file, slice: slice)
        try FileManager.default.removeItem(at: fixture.file)
        // The file is gone: only the cache can answer, for known and unknown addresses alike.
        let again = try await symbolizer.symbolicate([0x10_0000, 0x8], in: fixture.file, slice: slice)
        #expect(again == [first[1], first[0]] && first[0] != nil)
        await #expect(throws: Symbolizer.Failure.self) {
            try await symbolizer.symbolicate([0xC], in: fixture.file, slice: slice)
        }
    }

    @Test func aHungSymbolizerIsKilledAtItsDeadline() async throws {
        let directory = Self.temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = directory.appendingPathComponent("hung-symbolizer")
        let marker = directory.appendingPathComponent("started")
        // `exec` keeps the shell's pid: the one written is the sleeping child's.
        try Data("#!/bin/sh\necho $$ > '\(marker.path)'\nexec sleep 60\n".utf8).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        let symbolizer = Symbolizer(path: script.path, timeout: .milliseconds(500))
        let slice = MachOSlice(uuid: MachOFixture.defaultUUID, arch: "arm64", textVMAddress: 0, fileType: 1)
        let started = ContinuousClock.now
        await #expect {
            try await symbolizer.symbolicate([0x10], in: script, slice: slice)
        } throws: { error in
            if case .timedOut? = error as? Symbolizer.Failure { return true }
            return false
        }
        // It ran (the marker), and was stopped near its deadline, not after its 60 s.
        let written = try String(contentsOf: marker, encoding: .utf8)
        let pid = try #require(pid_t(written.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(ContinuousClock.now - started < .seconds(30))
        // And it is gone, reaped: not a zombie, not still sleeping.
        try await Self.untilGone(pid)
    }

    /// Waits (10 s at most) until no process has `pid`: the kernel frees it once the child is reaped.
    static func untilGone(_ pid: pid_t) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while kill(pid, 0) == 0 || errno != ESRCH {
            guard ContinuousClock.now < deadline else {
                Issue.record("process \(pid) still exists 10 s after its deadline")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func aFailingSymbolizerIsAnError() async throws {
        let directory = Self.temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = directory.appendingPathComponent("failing")
        try Data("#!/bin/sh\necho 'no such file' >&2\nexit 3\n".utf8).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        let slice = MachOSlice(uuid: MachOFixture.defaultUUID, arch: "arm64", textVMAddress: 0, fileType: 1)
        await #expect {
            try await Symbolizer(path: script.path).symbolicate([0x10], in: script, slice: slice)
        } throws: { error in
            if case .failed(3, "no such file")? = error as? Symbolizer.Failure { return true }
            return false
        }
        let garbage = directory.appendingPathComponent("garbage")
        try Data("#!/bin/sh\necho '[{\"Address\":\"0x10\"}]'\n".utf8).write(to: garbage)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: garbage.path)
        await #expect(throws: Symbolizer.Failure.self) {
            try await Symbolizer(path: garbage.path).symbolicate([0x10, 0x20], in: garbage, slice: slice)
        }
    }

    @Test func demanglesSwiftNamesInProcess() {
        #expect(Symbolizer.demangle("$s6MyShop12CheckoutViewV6submityyF") == "MyShop.CheckoutView.submit() -> ()")
        #expect(Symbolizer.demangle("_$s6MyShop4CartV5totalSivg") == "MyShop.Cart.total.getter : Swift.Int")
        #expect(Symbolizer.demangle("receipt_format") == "receipt_format")
        #expect(Symbolizer.demangle("$snot a symbol") == "$snot a symbol")
    }

    @Test func findsTheToolchainsSymbolizer() throws {
        let directory = Self.temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in ["swift", "llvm-symbolizer"] {
            let tool = directory.appendingPathComponent(name)
            try Data("#!/bin/sh\n".utf8).write(to: tool)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: tool.path)
        }
        #expect(Symbolizer.locate(environment: ["PATH": "/nowhere:" + directory.path]) == directory.path + "/llvm-symbolizer")
        let fallback = Symbolizer.locate(environment: [:])
        #expect(fallback == nil || FileManager.default.isExecutableFile(atPath: fallback!))
    }

    // MARK: - dSYM archives

    static func zip(_ entries: [(path: String, data: Data)]) throws -> Data {
        let archive = try Archive(accessMode: .create)
        for entry in entries {
            try archive.addEntry(with: entry.path, type: .file, uncompressedSize: Int64(entry.data.count), compressionMethod: .deflate) { position, size in
                entry.data.subdata(in: Int(position)..<Int(position) + size)
            }
        }
        return try #require(archive.data)
    }

    /// `zip` with every entry's uncompressed size, in its local header and its central directory
    /// entry, replaced by `size`: what a zip bomb declares to pass a check of its headers.
    static func lyingAboutSizes(_ zip: Data, size: UInt32) throws -> Data {
        var bytes = [UInt8](zip)
        func uint32(at offset: Int) -> Int { (0..<4).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) } }
        func uint16(at offset: Int) -> Int { Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 }
        func put(_ value: UInt32, at offset: Int) { for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) } }
        let end = try #require((0...bytes.count - 22).reversed().first { uint32(at: $0) == 0x0605_4B50 }, "no end of central directory")
        var entry = uint32(at: end + 16)
        for _ in 0..<uint16(at: end + 10) {
            try #require(uint32(at: entry) == 0x0201_4B50, "no central directory entry")
            let local = uint32(at: entry + 42)
            try #require(uint32(at: local) == 0x0403_4B50, "no local file header")
            put(size, at: entry + 24)
            put(size, at: local + 22)
            entry += 46 + uint16(at: entry + 28) + uint16(at: entry + 30) + uint16(at: entry + 32)
        }
        return Data(bytes)
    }

    @Test func aZipBombThatLiesInItsHeadersIsStoppedWhileItUnpacks() throws {
        let dwarf = "X.dSYM/Contents/Resources/DWARF/X"
        // 64 MiB of zeros that say they are 1,000 bytes: the headers pass, the count must not.
        let archive = try Archive(accessMode: .create)
        try archive.addEntry(with: dwarf, type: .file, uncompressedSize: Int64(64 << 20), compressionMethod: .deflate) { (_: Int64, size: Int) in Data(count: size) }
        let honest = try #require(archive.data)
        let bomb = try Self.lyingAboutSizes(honest, size: 1_000)
        let entries = try Array(Archive(data: bomb, accessMode: .read))
        #expect(entries.map(\.uncompressedSize) == [1_000])
        // Read whole (a limit past it) it gives its 64 MiB: its headers alone would let it through.
        #expect(try DSYMArchive.binaries(in: bomb, limit: 128 << 20).map(\.data.count) == [64 << 20])
        // Counted as it unpacks, it is refused at 1 MiB (each chunk is checked before it is kept).
        #expect {
            try DSYMArchive.binaries(in: bomb, limit: 1 << 20)
        } throws: { error in
            (error as? DSYMArchive.Failure)?.reason == "The dSYMs unpack to more than \(1 << 20) bytes."
        }
    }

    @Test func takesTheDWARFFilesOutOfAZipOfDSYMs() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fixture = try MachOFixture.build(in: directory)
        let other = try MachOFixture.withUUID(try Data(contentsOf: directory.appendingPathComponent("MyShop.o")), uuid: "0B6E6A8C-3F7D-3A1C-9E2B-5D4C3B2A1908")
        let data = try Self.zip([
            ("dSYMs/MyShop.app.dSYM/Contents/Info.plist", Data("<plist/>".utf8)),
            ("dSYMs/MyShop.app.dSYM/Contents/Resources/DWARF/MyShop", fixture.data),
            ("dSYMs/ShopKit.framework.dSYM/Contents/Resources/DWARF/ShopKit", other),
            ("__MACOSX/dSYMs/MyShop.app.dSYM/Contents/Resources/DWARF/._MyShop", Data("junk".utf8)),
            ("dSYMs/MyShop.app.dSYM/Contents/Resources/Relocations/aarch64/MyShop.yml", Data("---".utf8)),
        ])
        let binaries = try DSYMArchive.binaries(in: data, limit: 10 << 20)
        #expect(binaries.map(\.name) == ["MyShop", "ShopKit"])
        #expect(binaries.map(\.data) == [fixture.data, other])
        #expect(try binaries.flatMap { try MachOFile.slices(of: $0.data).map(\.uuid) } == [MachOFixture.defaultUUID, "0B6E6A8C-3F7D-3A1C-9E2B-5D4C3B2A1908"])
        // A raw Mach-O is the binary itself.
        #expect(try DSYMArchive.binaries(in: fixture.data, limit: 10 << 20).map(\.data) == [fixture.data])
    }

    @Test func refusesZipBombsPathTricksAndOtherFiles() throws {
        let dwarf = "X.dSYM/Contents/Resources/DWARF/X"
        // 16 MiB of zeros deflate to a few KiB.
        let bomb = try Self.zip([(dwarf, Data(count: 16 << 20))])
        #expect(bomb.count < 100_000)
        #expect(throws: DSYMArchive.Failure.self) { try DSYMArchive.binaries(in: bomb, limit: 1 << 20) }
        // Each under the limit, more than it together.
        let several = try Self.zip((0..<4).map { ("\($0).dSYM/Contents/Resources/DWARF/B\($0)", Data(count: 400_000)) })
        #expect(throws: DSYMArchive.Failure.self) { try DSYMArchive.binaries(in: several, limit: 1 << 20) }
        #expect(try DSYMArchive.binaries(in: several, limit: 2 << 20).count == 4)
        for path in ["../" + dwarf, "/abs/" + dwarf, "a/../../" + dwarf] {
            let tricked = try Self.zip([(path, Data("x".utf8))])
            #expect(throws: DSYMArchive.Failure.self, "\(path)") { try DSYMArchive.binaries(in: tricked, limit: 1 << 20) }
        }
        let noDSYM = try Self.zip([("MyShop.app/MyShop", Data("x".utf8))])
        #expect(throws: DSYMArchive.Failure.self) { try DSYMArchive.binaries(in: noDSYM, limit: 1 << 20) }
        #expect(throws: DSYMArchive.Failure.self) { try DSYMArchive.binaries(in: Data("PK\u{3}\u{4} and then nothing".utf8), limit: 1 << 20) }
        #expect(throws: DSYMArchive.Failure.self) { try DSYMArchive.binaries(in: Data("hello".utf8), limit: 1 << 20) }
    }
}
