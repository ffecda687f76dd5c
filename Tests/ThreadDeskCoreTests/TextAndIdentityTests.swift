import DiscordREST
import Foundation
import Testing
import ThreadDeskCore

@Suite("Message text")
struct MessageTextTests {
    @Test func validatesAfterTrimming() {
        #expect(MessageText.validate("  hi \n") == .success("hi"))
        #expect(MessageText.validate(" \n\t ") == .failure(.empty))
        #expect(MessageText.validate(String(repeating: "é", count: 4000)) == .success(String(repeating: "é", count: 4000)))
        #expect(MessageText.validate(String(repeating: "a", count: 4001)) == .failure(.tooLong(4001)))
    }

    @Test func shortTextIsOnePart() {
        #expect(MessageText.split("hello") == ["hello"])
    }

    @Test func splitsAtWordsAndNeverExceedsTheLimit() {
        let text = (0..<900).map { "w\($0)" }.joined(separator: " ")
        let parts = MessageText.split(text)
        #expect(parts.count > 1)
        #expect(parts.allSatisfy { $0.utf16.count <= 2000 })
        #expect(parts.joined(separator: " ") == text)
    }

    @Test func neverCutsACharacterInTwo() {
        let flags = String(repeating: "🇩🇪", count: 1500)  // 4 UTF-16 units each, no spaces
        let parts = MessageText.split(flags)
        #expect(parts.allSatisfy { $0.utf16.count <= 2000 })
        #expect(parts.joined() == flags)
        #expect(parts.allSatisfy { $0.allSatisfy { $0 == "🇩🇪" } })
    }

    @Test func aCharacterWiderThanAPostIsCutBetweenScalarsAndSplittingEnds() {
        // One grapheme cluster of 2,501 scalars: it used to make `split` loop forever.
        let zalgo = "e" + String(repeating: "\u{301}", count: 2500)
        #expect(zalgo.count == 1)
        let parts = MessageText.split(zalgo)
        #expect(parts.count == 2)
        #expect(parts.allSatisfy { $0.utf16.count <= 2000 })
        #expect(Array(parts.joined().unicodeScalars) == Array(zalgo.unicodeScalars))
        // Text around it splits as before.
        let mixed = "before " + zalgo + " after"
        #expect(Array(MessageText.split(mixed).joined().unicodeScalars).filter { $0 != " " }
            == Array(mixed.unicodeScalars).filter { $0 != " " })
    }

    @Test func aSpaceCarryingACombiningMarkIsTextNotWhitespace() {
        // Found by the fuzzer (scripts/fuzz text): trimming at a cut dropped the mark.
        let text = "\n\u{0} \u{73F}"
        let parts = MessageText.split(text, limit: 2)
        #expect(parts.joined().unicodeScalars.contains("\u{73F}"))
        #expect(parts.allSatisfy { $0.utf16.count <= 2 })
    }

    @Test func refusesTextTooLongForFourPostsOrWithAbsurdCharacters() {
        #expect(MessageText.validate("e" + String(repeating: "\u{301}", count: 2500)) == .failure(.characterTooComplex))
        // 4,000 characters but 16,000 UTF-16 units: more than four posts.
        #expect(MessageText.validate(String(repeating: "🇩🇪", count: 4000)) == .failure(.tooLongForDiscord(utf16Units: 16_000)))
        // A family emoji with skin tones is one ordinary character.
        let family = "👩🏽\u{200D}👩🏽\u{200D}👧🏽\u{200D}👦🏽"
        #expect(MessageText.validate(family) == .success(family))
    }

    @Test func clipsToTheLimitWithAnEllipsis() {
        let clipped = MessageText.clip(String(repeating: "😀", count: 1500))
        #expect(clipped.utf16.count <= 2000)
        #expect(clipped.hasSuffix("…"))
        #expect(MessageText.clip("short") == "short")
    }
}

@Suite("Ids, tokens and identity")
struct IdentityTests {
    @Test func userIDsAreValidated() {
        #expect(UserID("abc-def-ghi")?.isLegacyShaped == true)
        #expect(UserID("user_42@app.example")?.isLegacyShaped == false)
        for bad in ["", "has space", "ünicode", String(repeating: "a", count: 129), "new\nline", "a/b"] {
            #expect(UserID(bad) == nil, "\(bad)")
        }
    }

    @Test func generatedIDsAreUniqueAndCarry128Bits() {
        let ids = Set((0..<1000).map { _ in UserID.generate().rawValue })
        #expect(ids.count == 1000)
        // 26 base32 characters: 130 bits.
        #expect(ids.allSatisfy { $0.count == 28 && $0.dropFirst(2).allSatisfy { "abcdefghijklmnopqrstuvwxyz234567".contains($0) } })
    }

    @Test func tokensAreRandomAndStoredHashed() {
        let token = UserToken.generate()
        #expect(token.count == 43)
        #expect(token != UserToken.generate())
        #expect(UserToken.hash(token).count == 64)
        #expect(UserToken.hash(token) == UserToken.hash(token))
    }

    @Test func userHashIsHexHMACSHA256() {
        let verifier = IdentityVerifier(secret: "key")
        let id = UserID("abc")!
        let hash = verifier.userHash(for: id)
        // What an app backend computes, e.g. Python's hmac.new(b"key", b"abc", sha256).hexdigest().
        #expect(hash == "9c196e32dc0175f86f4b1cb89289d6619de6bee699e4c378e68309ed97a1a6ab")
        #expect(verifier.verify(hash, for: id))
        #expect(verifier.verify(hash.uppercased(), for: id))
        #expect(!verifier.verify(hash, for: UserID("abd")!))
        #expect(!verifier.verify("zz", for: id))
        #expect(!IdentityVerifier(secret: "other").verify(hash, for: id))
    }

    /// Logs name a user by a keyed fingerprint: the same within this process, never the id.
    @Test func logsNameAUserByAFingerprint() {
        let legacy = UserID("q8w-3e4-r5t")!
        let fingerprint = legacy.logValue
        #expect(fingerprint == legacy.logValue)
        #expect(fingerprint.hasPrefix("u#") && fingerprint.count == 14)
        #expect(fingerprint.dropFirst(2).allSatisfy { $0.isHexDigit })
        #expect(!fingerprint.contains("q8w") && !fingerprint.contains("r5t"))
        #expect(UserID("q8w-3e4-r5u")!.logValue != fingerprint)
    }

    @Test func secretsCompareByValue() {
        #expect(constantTimeEquals("app-key", "app-key"))
        #expect(!constantTimeEquals("app-key", "app-kez"))
        #expect(!constantTimeEquals("app-key", ""))
    }
}
