import Foundation

extension AssistEmulator {
    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        /// 0 picks a free port.
        public var port = 0
        /// The models it serves; any other name is refused with 404 `model_not_found`.
        public var models = ["test-model"]
        /// When set, requests must carry `Authorization: Bearer <apiKey>`.
        public var apiKey: String?
        /// How many characters each streamed `content` piece holds.
        public var chunkCharacters = 16
        /// A larger request body is refused with 413 before it is read whole.
        public var maxRequestBytes = 1 << 20
        /// The oldest recorded requests are forgotten past this many bytes of message text.
        public var maxRecordedBytes = 32 << 20
        /// A `hang` ends by itself after this long, so nothing waits forever even unreleased.
        public var holdLimit: Duration = .seconds(300)

        public init() {}
    }

    /// One request to `/v1/chat/completions`, as it arrived. The key itself is never kept.
    public struct RecordedRequest: Sendable, Codable, Equatable {
        public struct Message: Sendable, Codable, Equatable {
            public var role: String
            public var content: String
        }

        /// In order of arrival, from 1.
        public var id: Int
        public var receivedAt: Date
        public var path: String
        public var authorization: AuthorizationSeen
        public var model: String?
        public var stream: Bool
        public var includeUsage: Bool
        public var maxTokens: Int?
        public var temperature: Double?
        public var messages: [Message]
        /// What it was answered with: an outcome's name (`rule`, `answer`, `status`, …) or
        /// `refused` when the request itself was refused.
        public var outcome: String
        /// The HTTP status it was answered with.
        public var status: Int
    }

    /// What the `Authorization` header held, without its secret.
    public enum AuthorizationSeen: String, Sendable, Codable {
        case absent
        /// A bearer token: the configured key, or any when none is configured.
        case bearer
        /// A bearer token that is not the configured key.
        case wrongBearer = "wrong-bearer"
        /// Another scheme.
        case other
    }

    public struct Counters: Sendable, Hashable, Codable {
        /// Requests to `/v1/chat/completions`, refused ones included.
        public var chatRequests = 0
        /// Of those, how many asked for a stream.
        public var streamed = 0
        /// Completions answered in full (200 with choices).
        public var completed = 0
        /// Requests refused before an outcome applied, by status (`"401"`, `"404"`, …).
        public var refused: [String: Int] = [:]
        /// Scripted faults played, by outcome name (`status 429`, `malformed`, `cutStream`, …).
        public var faults: [String: Int] = [:]
        /// Requests held by `hang` right now.
        public var held = 0
        /// Held requests let go by `release()`, `reset()`, shutdown or the hold limit.
        public var released = 0
        public var modelListings = 0
        public var promptTokens = 0
        public var completionTokens = 0

        public init() {}
    }

    struct State {
        var nextRequestID = 1
        var requests: [RecordedRequest] = []
        var recordedBytes = 0
        var script: [Outcome] = []
        var permanent: Outcome?
        var counters = Counters()
        /// Requests held by `hang`, by id; resumed by `release()`, `reset()` or their end.
        var holds: [Int: CheckedContinuation<Void, any Error>] = [:]
    }
}
