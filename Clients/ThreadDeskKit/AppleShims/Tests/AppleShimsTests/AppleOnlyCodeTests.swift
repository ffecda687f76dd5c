@_spi(Shim) import DeviceCheck
import CryptoKit
@_spi(Shim) import UserNotifications
import Foundation
import Testing
import ThreadDeskKit
import ThreadDeskWire

// These tests name `DeviceCheckAttestProvider` and `SupportNotifications`, which exist only when
// their `#if canImport(…)` blocks were compiled: a block silently skipped fails the build here.

@Suite("Apple-only code against the shims")
struct AppleOnlyCodeTests {
    @Test func sha256MatchesKnownDigests() {
        #expect(hex(SHA256.hash(data: Data())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex(SHA256.hash(data: Data("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // Two blocks: the padding does not fit after 56 bytes.
        let twoBlocks = Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(hex(SHA256.hash(data: twoBlocks)) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(hex(SHA256.hash(data: Data(repeating: 0x61, count: 1_000))) == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    @Test func attestProviderPassesSHA256OfTheClientData() async throws {
        let provider = DeviceCheckAttestProvider()
        #expect(DeviceCheckAttestProvider.isSupported == false)
        let keyID = try await provider.generateKey()
        #expect(keyID == DCAppAttestService.shimKeyID)

        let clientData = Data("challenge".utf8)
        let hash = Data(SHA256.hash(data: clientData))
        #expect(hash.count == 32)
        #expect(try await provider.attestKey(keyID, clientData: clientData) == Data("attestation:\(keyID):".utf8) + hash)
        #expect(try await provider.generateAssertion(keyID, clientData: clientData) == Data("assertion:\(keyID):".utf8) + hash)
    }

    @Test func onlyAnInvalidKeyIsALostKey() async throws {
        let provider = DeviceCheckAttestProvider()
        #expect(provider.isKeyLost(DCError(.invalidKey)))
        for code: DCError.Code in [.unknownSystemFailure, .featureUnsupported, .invalidInput, .serverUnavailable] {
            #expect(!provider.isKeyLost(DCError(code)))
        }
        #expect(!provider.isKeyLost(URLError(.timedOut)))

        // As the service throws it (through the protocol's existential, as ThreadDeskClient calls it).
        let attester: any AppAttestProvider = provider
        let error = await #expect(throws: DCError.self) {
            try await attester.generateAssertion(DCAppAttestService.shimLostKeyID, clientData: Data("request".utf8))
        }
        #expect(error.map(attester.isKeyLost) == true)
    }

    @Test func aTappedSupportPushIsRecognised() {
        let supportInfo: [AnyHashable: Any] = [
            PushPayload.messageID: "1234567890",
            "aps": ["badge": 3, "thread-id": "user-1", "alert": ["body": "Hello"]] as [AnyHashable: Any],
        ]
        #expect(SupportNotifications.push(from: response(supportInfo)) == SupportPush(messageID: "1234567890", badge: 3, userID: "user-1"))
        #expect(SupportNotifications.push(from: response(["aps": ["alert": "Sale!"] as [AnyHashable: Any]])) == nil)
        #expect(SupportNotifications.ratingPush(from: response(supportInfo)) == nil)
    }

    @Test func aTappedRatingPushIsRecognisedAndIsNoMessagePush() {
        let ratingInfo: [AnyHashable: Any] = [
            PushPayload.ratingConversationID: "1311", "aps": ["thread-id": "user-1", "alert": ["body": "How did we do?"]] as [AnyHashable: Any],
        ]
        #expect(SupportNotifications.ratingPush(from: response(ratingInfo)) == SupportRatingPush(conversationID: "1311", userID: "user-1"))
        #expect(SupportNotifications.push(from: response(ratingInfo)) == nil)
        #expect(SupportNotifications.ratingPush(from: response(["aps": ["alert": "Sale!"] as [AnyHashable: Any]])) == nil)
    }

    @Test func aSupportPushShowsNoBannerWhileTheConversationIsOnScreen() {
        let support = notification([PushPayload.messageID: "42"])
        let rating = notification([PushPayload.ratingConversationID: "1311"])
        let other = notification(["campaign": "spring"])
        let all: UNNotificationPresentationOptions = [.banner, .list, .sound, .badge]
        #expect(SupportNotifications.presentationOptions(for: support, conversationOnScreen: true) == [])
        #expect(SupportNotifications.presentationOptions(for: support, conversationOnScreen: false) == all)
        // The rating row is in the chat on screen.
        #expect(SupportNotifications.presentationOptions(for: rating, conversationOnScreen: true) == [])
        #expect(SupportNotifications.presentationOptions(for: rating, conversationOnScreen: false) == all)
        #expect(SupportNotifications.presentationOptions(for: other, conversationOnScreen: true) == all)
        #expect(SupportNotifications.presentationOptions(for: other, conversationOnScreen: true, otherwise: .sound) == .sound)
    }

    private func hex(_ digest: SHA256.Digest) -> String { digest.map { String(format: "%02x", $0) }.joined() }

    private func notification(_ userInfo: [AnyHashable: Any]) -> UNNotification {
        UNNotification(request: UNNotificationRequest(content: UNNotificationContent(userInfo: userInfo)))
    }

    private func response(_ userInfo: [AnyHashable: Any]) -> UNNotificationResponse {
        UNNotificationResponse(notification: notification(userInfo))
    }
}

/// The one notification center is shared: these run one at a time.
@Suite("SupportNotifications against the shared center", .serialized)
struct SupportNotificationCenterTests {
    @Test func asksForAlertsBadgeAndSound() async throws {
        #expect(try await SupportNotifications.requestAuthorization())
        #expect(UNUserNotificationCenter.current().shimRequestedOptions == [.alert, .badge, .sound])
    }

    @Test func theBadgeIsTheUnreadCountAndNeverNegative() async throws {
        try await SupportNotifications.setBadge(7)
        #expect(UNUserNotificationCenter.current().shimBadgeCount == 7)
        try await SupportNotifications.setBadge(-2)
        #expect(UNUserNotificationCenter.current().shimBadgeCount == 0)
    }
}
