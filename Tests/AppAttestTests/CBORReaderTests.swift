import AppAttest
import Foundation
import SoftwareAttester
import SwiftASN1
import Testing
import TestSupport

@Suite struct CBORReaderTests {
    @Test func readsWhatTheFormatNeedsAndIgnoresTheRest() throws {
        let item = CBOR.map([
            .init(.text("n"), CBOR(-7)), .init(.text("b"), .bytes([1, 2, 3])), .init(.text("a"), .array([CBOR(1), .text("é")])),
            .init(CBOR(1), CBOR(65536)),
        ])
        #expect(try CBORReader().read(item.encoded) == item)
        // A float and a boolean (what the format never uses) read past as `.other`.
        let withExtras: [UInt8] = [0xa2, 0x61, 0x66, 0xfb] + [UInt8](repeating: 0, count: 8) + [0x61, 0x74, 0xf5]
        #expect(try CBORReader().read(withExtras)["t"] == .other)
        // A tag is read past to what it tags.
        #expect(try CBORReader().read([0xc2, 0x41, 0x05]) == .bytes([5]))
    }

    @Test func hostileInputEndsInAnError() {
        let reader = CBORReader(maxBytes: 1024, maxDepth: 4, maxItems: 100)
        #expect(throws: CBORError.tooDeep) { try reader.read([UInt8](repeating: 0x81, count: 10) + [0x00]) }
        #expect(throws: CBORError.tooLarge) { try reader.read([UInt8](repeating: 0, count: 2000)) }
        #expect(throws: CBORError.tooLarge) { try reader.read([0x98, 200] + [UInt8](repeating: 0, count: 200)) }
        // A length far past the input: refused before anything is allocated.
        #expect(throws: CBORError.truncated) { try reader.read([0x5b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]) }
        #expect(throws: CBORError.truncated) { try reader.read([0xbb, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]) }
        #expect(throws: CBORError.unsupported) { try reader.read([0x9f, 0x01, 0xff]) }
        #expect(throws: CBORError.invalidText) { try reader.read([0x62, 0xc3, 0x28]) }
        #expect(throws: CBORError.trailingBytes) { try reader.read([0x01, 0x02]) }
        #expect(throws: CBORError.truncated) { try reader.read([]) }
    }

    /// A newer OS may add fields, nested and long: an attestation with one 12 levels deep and
    /// one of 1,000 items (the old limits were depth 4, 256 items) still verifies.
    @Test func anAttestationWithNewDeepAndLongFieldsVerifies() async throws {
        let attester = try SoftwareAttester()
        let verifier = AppAttestVerifier(appIDs: [attester.appID], roots: [try .init(pemEncoded: attester.rootCertificatePEM)])
        let key = attester.generateKey()
        let hash = [UInt8](repeating: 3, count: 32)
        guard case .map(var entries) = try CBORReader().read(try attester.attest(key, clientDataHash: hash)) else {
            Issue.record("not a map")
            return
        }
        var deep = CBOR.text("leaf")
        for _ in 0..<12 { deep = .array([deep]) }
        entries.append(.init(.text("future"), deep))
        entries.append(.init(.text("futureList"), .array((0..<1000).map { CBOR($0) })))
        let extended = CBOR.map(entries).encoded
        #expect(extended.count <= AttestationObject.maxBytes)
        let accepted = try await verifier.verifyAttestation(extended, keyID: key.id, clientDataHash: hash, at: Date())
        #expect(accepted.keyID == key.id)
    }

    /// An attestation the software attester made, mutated hundreds of ways (seeded, so the
    /// same each run): each ends in a verdict, never a crash; the full check runs on every one.
    @Test func mutatedAttestationsEndInAVerdict() async throws {
        let attester = try SoftwareAttester()
        let verifier = AppAttestVerifier(appIDs: [attester.appID], roots: [try .init(pemEncoded: attester.rootCertificatePEM)])
        let key = attester.generateKey()
        let hash = [UInt8](repeating: 3, count: 32)
        let original = try attester.attest(key, clientDataHash: hash)
        var random = SeededRandom(seed: 30)
        var refused = 0
        for _ in 0..<600 {
            // CPU-bound: let the other tests of a parallel run have the cooperative pool in between.
            await Task.yield()
            var bytes = original
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let index = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[index] = UInt8.random(in: 0...255, using: &random)
                case 1: bytes.removeSubrange(index..<min(bytes.count, index + Int.random(in: 1...16, using: &random)))
                default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: index)
                }
                if bytes.isEmpty { bytes = [0] }
            }
            do {
                _ = try await verifier.verifyAttestation(bytes, keyID: key.id, clientDataHash: hash, at: Date())
            } catch {
                refused += 1
            }
        }
        #expect(refused > 550)
    }
}
