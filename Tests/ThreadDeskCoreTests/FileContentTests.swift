import Foundation
import Testing
import TestSupport
import ThreadDeskCore

@Suite("What a file's bytes are")
struct FileContentTests {
    static func matches(_ type: String, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { FileContent.matches(type, $0) }
    }

    static func json(_ text: String) -> Bool { matches("application/json", Array(text.utf8)) }

    @Test func everyDefaultTypeHasARule() {
        #expect(Set(AttachmentRules.defaultTypes) == FileContent.checkedTypes)
        #expect(Set(FileSamples.byType.map(\.type)) == FileContent.checkedTypes)
    }

    /// Each sample is its own type and no other (HEIC and HEIF share a container; PNG bytes are
    /// not text; a JSON document is also valid text, which is allowed).
    @Test func eachTypeAcceptsItsOwnBytesAndRefusesTheOthers() {
        for (type, _, bytes) in FileSamples.byType {
            #expect(Self.matches(type, bytes), "\(type) refused its own bytes")
            for other in FileSamples.byType where other.type != type {
                // HEIC and HEIF share a container; so do MP4 and QuickTime.
                let families = [Set(["image/heic", "image/heif"]), Set(["video/mp4", "video/quicktime"])]
                if families.contains(where: { $0.contains(type) && $0.contains(other.type) }) { continue }
                if type == "text/plain" && ["application/json", "application/pdf"].contains(other.type) { continue }
                #expect(!Self.matches(type, other.bytes), "\(type) accepted the bytes of \(other.type)")
            }
        }
        #expect(FileSamples.bytes(of: "application/pdf").withUnsafeBytes { FileContent.sniff($0) } == "application/pdf")
        #expect(FileSamples.bytes(of: "video/quicktime").withUnsafeBytes { FileContent.sniff($0) } == "video/quicktime")
    }

    @Test func aTypeWithoutARuleIsCheckedByNothing() {
        #expect(Self.matches("audio/mpeg", [0, 1, 2]))
    }

    @Test func jsonIsJSONByTheGrammar() {
        for valid in ["0", "-0.5e-3", "\"\"", "[]", "{}", " [ 1 , {\"a\" : [null, true, false]} ] \n", "\u{FEFF}{}", "\"\\u00e9\\ud83d\\ude00\\n\""] {
            #expect(Self.json(valid), "refused \(valid)")
        }
        for invalid in ["", " ", "[", "]", "{\"a\"}", "{\"a\":1,}", "[1,]", "01", "1.", ".5", "1e", "+1", "tru", "nul", "[1 2]",
                        "\"\\x\"", "\"\u{01}\"", "\"\\ud83d\"", "\"\\ude00\"", "{1:2}", "[]]", "{} {}", "\"open", "NaN", "[1,,2]"] {
            #expect(!Self.json(invalid), "accepted \(invalid.debugDescription)")
        }
        // Invalid UTF-8 inside a string: an overlong form, a lone continuation byte, a surrogate.
        for bytes: [UInt8] in [[0x22, 0xC0, 0xAF, 0x22], [0x22, 0x80, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22]] {
            #expect(!Self.matches("application/json", bytes))
        }
    }

    /// Nesting past the limit is refused whatever the size; up to it, accepted.
    @Test func jsonNestingIsBounded() {
        let limit = FileContent.jsonDepthLimit
        #expect(Self.json(String(repeating: "[", count: limit) + String(repeating: "]", count: limit)))
        #expect(!Self.json(String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)))
        #expect(!Self.json(String(repeating: "{\"a\":", count: limit + 1) + "1" + String(repeating: "}", count: limit + 1)))
        // A million brackets: refused at the limit, without reading further or recursing deeper.
        #expect(!Self.json(String(repeating: "[", count: 1_000_000)))
    }

    @Test func plainTextIsUTF8WithoutNUL() {
        #expect(Self.matches("text/plain", Array("héllo\r\n\t".utf8)))
        #expect(Self.matches("text/plain", []) )
        #expect(!Self.matches("text/plain", [0x68, 0x00, 0x69]))
        #expect(!Self.matches("text/plain", [0x68, 0xFF]))
        #expect(!Self.matches("text/plain", [0xE2, 0x82]))
    }

    @Test func isoMediaNeedsAKnownBoxAndASaneSize() {
        #expect(Self.matches("video/mp4", [0, 0, 0, 8] + Array("moov".utf8)))
        #expect(Self.matches("video/mp4", [0, 0, 0, 1] + Array("mdat".utf8)))
        #expect(!Self.matches("video/mp4", [0, 0, 0, 7] + Array("ftyp".utf8)))
        #expect(!Self.matches("video/mp4", [0, 0, 0, 8] + Array("abcd".utf8)))
        #expect(!Self.matches("video/quicktime", Array("ftyp".utf8)))
    }
}
