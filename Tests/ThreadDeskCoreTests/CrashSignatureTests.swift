import Foundation
import Testing
import TestSupport
import ThreadDeskCore

@Suite("Crash signatures and version order")
struct CrashSignatureTests {
    static let uuid = MachOFixture.defaultUUID

    static func crash(offsets: [UInt64] = [0x18, 0x7C], appVersion: String = "4.2", exception: Int = 1, signal: Int = 11) throws -> CrashDiagnostic {
        try MetricKitPayload(json: MachOFixture.crashPayload(uuid: uuid, offsets: offsets, mainOffset: 0xD0, appVersion: appVersion, exception: exception, signal: signal))
            .diagnostics[0]
    }

    @Test func namesTheAppsTopFramesByFunctionWhenSymbolicated() throws {
        let crash = try Self.crash()
        let isApp = CrashSignature.appFrames(dsymUUIDs: [Self.uuid], executable: nil)
        let symbols: [Int: SymbolicatedFrame] = [
            0: SymbolicatedFrame(function: "MyShop.CheckoutView.submit() -> ()", file: "CheckoutView.swift", line: 44),
            1: SymbolicatedFrame(function: "MyShop.CheckoutView.tapButton() -> ()", file: "CheckoutView.swift", line: 62),
            5: SymbolicatedFrame(function: "static MyShop.MyShopApp.$main() -> ()", file: "MyShopApp.swift", line: 7),
        ]
        let signature = CrashSignature.of(crash, symbols: symbols, isAppFrame: isApp)
        #expect(signature == "crash|EXC_BAD_ACCESS|SIGSEGV|MyShop.CheckoutView.submit() -> ()|MyShop.CheckoutView.tapButton() -> ()|static MyShop.MyShopApp.$main() -> ()")
        // Another user, another version, other lines: the same signature.
        let later = try Self.crash(offsets: [0x20, 0x80], appVersion: "4.3")
        var moved = symbols
        moved[0]?.line = 51
        #expect(CrashSignature.of(later, symbols: moved, isAppFrame: isApp) == signature)
        #expect(CrashSignature.hash(signature) == CrashSignature.hash(signature))
        #expect(CrashSignature.hash(signature).count == 16 && CrashSignature.hash(signature).allSatisfy(\.isHexDigit))
        #expect(CrashSignature.hash(signature) != CrashSignature.hash(signature + "x"))
    }

    @Test func namesUnsymbolicatedFramesByBinaryAndOffset() throws {
        let crash = try Self.crash()
        #expect(CrashSignature.mainBinaryName(of: crash) == "MyShop")
        let isApp = CrashSignature.appFrames(dsymUUIDs: [], executable: CrashSignature.mainBinaryName(of: crash))
        #expect(CrashSignature.of(crash, symbols: [:], isAppFrame: isApp) == "crash|EXC_BAD_ACCESS|SIGSEGV|MyShop+0x18|MyShop+0x7c|MyShop+0xd0")
        let other = try Self.crash(exception: 10, signal: 6)
        #expect(CrashSignature.of(other, symbols: [:], isAppFrame: isApp).hasPrefix("crash|EXC_CRASH|SIGABRT|"))
    }

    @Test func aStackWithoutTheAppIsNamedByItsTopFrames() throws {
        let crash = try Self.crash(offsets: [])
        let signature = CrashSignature.of(crash, symbols: [:], isAppFrame: { _ in false })
        #expect(signature == "crash|EXC_BAD_ACCESS|SIGSEGV|libswiftCore.dylib+0x3a1c4|UIKitCore+0x10f3a8|UIKitCore+0x88d20")
        let empty = CrashDiagnostic(kind: .hang)
        #expect(CrashSignature.of(empty, symbols: [:], isAppFrame: { _ in true }) == "hang||")
    }

    @Test(arguments: [
        ("4.2.1", "4.3", ComparisonResult.orderedAscending),
        ("4.3", "4.3.0", .orderedSame),
        ("4.10", "4.9", .orderedDescending),
        ("4.3", "4.3b1", .orderedAscending),
        ("4.3b2", "4.3b10", .orderedDescending),
        ("04.3", "4.3", .orderedSame),
        ("1.0.0", "1", .orderedSame),
        ("99999999999999999999999.1", "99999999999999999999998.9", .orderedDescending),
        ("", "0", .orderedSame),
        ("2", "10", .orderedAscending),
        (" 4.3 ", "4.3", .orderedSame),
    ])
    func ordersVersions(left: String, right: String, order: ComparisonResult) {
        #expect(VersionOrder.compare(left, right) == order)
        let reversed: ComparisonResult = order == .orderedAscending ? .orderedDescending : order == .orderedDescending ? .orderedAscending : .orderedSame
        #expect(VersionOrder.compare(right, left) == reversed)
    }

    @Test func olderThanAFix() {
        #expect(VersionOrder.isOlder("4.2.9", than: "4.3"))
        #expect(!VersionOrder.isOlder("4.3", than: "4.3"))
        #expect(!VersionOrder.isOlder("4.3.1", than: "4.3"))
    }
}
