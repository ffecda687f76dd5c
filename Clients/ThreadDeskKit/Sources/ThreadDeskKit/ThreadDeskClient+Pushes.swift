import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Pushes: the device token registered, and the message a push announces.
extension ThreadDeskClient {
    /// Registers the device token Apple gave the app (`didRegisterForRemoteNotificationsWithDeviceToken`).
    public func registerPushToken(_ deviceToken: Data, environment: PushEnvironmentName) async throws(ThreadDeskError) {
        let hex = deviceToken.map { String(format: "%02x", $0) }.joined()
        try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
            var request = request("v1/push-token", method: "PUT", token: token)
            try encode(PushTokenRequest(token: hex, environment: environment), into: &request)
            // Signed by an attested session's key: a copied token alone cannot take the user's pushes.
            _ = try await sendSigned(request)
        }
    }

    /// No more pushes to this device.
    public func unregisterPushToken() async throws(ThreadDeskError) {
        try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
            _ = try await sendSigned(request("v1/push-token", method: "DELETE", token: token))
        }
    }

    /// The id of the support message a ThreadDesk push announces (`userInfo` of the
    /// notification), nil for any other push.
    public nonisolated static func messageID(fromPush userInfo: [AnyHashable: Any]) -> String? {
        SupportPush(userInfo: userInfo)?.messageID
    }

    /// The message a push announced, fetched (nil when it is no longer visible).
    public func message(forPush userInfo: [AnyHashable: Any]) async throws(ThreadDeskError) -> SupportMessage? {
        guard let id = Self.messageID(fromPush: userInfo), let number = UInt64(id), number > 0 else { return nil }
        let page = try await messages(after: String(number - 1), limit: 1)
        return page.messages.first { $0.id == id }
    }
}
