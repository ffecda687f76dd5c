import Foundation

extension APNsEmulator {
    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        /// 0 picks a free port.
        public var port = 0
        /// The first app's bundle id; `otherTopics` are the other apps' the same key signs for.
        public var topic = "com.example.threaddesk"
        public var otherTopics: [String] = []
        public var keyID = "EMUKEY1234"
        public var teamID = "EMUTEAM123"

        public init() {}
    }

    /// What a client needs to talk to the emulator, as the `apns-emulator` executable prints it.
    public struct Credentials: Sendable, Codable, Hashable {
        public var url: String
        public var topic: String
        public var keyID: String
        public var teamID: String
        /// The team's signing key (.p8 contents) the emulator accepts tokens from.
        public var privateKeyPEM: String
        /// The emulator's CA, to add as a trust root.
        public var caCertificatePEM: String
    }

    /// What happens to the next request for a device token, when scripted.
    public enum Outcome: Sendable, Hashable, Codable {
        case deliver
        case reject(status: Int, reason: String)
        /// 410 Unregistered with the given timestamp (ms since 1970).
        case unregistered(timestamp: Int64)
        /// Wait, then deliver.
        case delay(milliseconds: Int)
    }

    /// One accepted notification.
    public struct Delivery: Sendable, Equatable, Codable {
        public var deviceToken: String
        public var apnsID: String
        public var topic: String
        public var pushType: String
        public var priority: Int
        public var collapseID: String?
        public var expiration: Int?
        public var payload: Data
        public var receivedAt: Date

        /// The payload's `aps` dictionary, decoded loosely for assertions.
        public var aps: [String: Any] {
            ((try? JSONSerialization.jsonObject(with: payload)) as? [String: Any])?["aps"] as? [String: Any] ?? [:]
        }
    }

    public struct Counters: Sendable, Hashable, Codable {
        public var requests = 0
        public var delivered = 0
        /// Refusals by Apple reason.
        public var rejected: [String: Int] = [:]
        public var connections = 0
    }
}
