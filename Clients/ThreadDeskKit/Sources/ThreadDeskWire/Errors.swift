/// The body of every error answer: `{"error": {"code", "message"}}`. A 429 or 503 also
/// carries `Retry-After` (seconds).
public struct ErrorBody: Sendable, Codable, Hashable {
    public struct Detail: Sendable, Codable, Hashable {
        public var code: ErrorCode
        /// For people (logs, developers), not for matching.
        public var message: String

        public init(code: ErrorCode, message: String) {
            self.code = code
            self.message = message
        }
    }

    public var error: Detail

    public init(code: ErrorCode, message: String) { error = Detail(code: code, message: message) }
}

/// Every error code the server answers with. A code this build does not know (a newer server)
/// arrives as ``unknown(_:)``, so an app never fails to read an error.
public enum ErrorCode: Sendable, Hashable, Codable, RawRepresentable, CustomStringConvertible {
    case attachmentNotFound
    case attachmentUnavailable
    case bodyTooLarge
    case busy
    case discordBusy
    case discordMisconfigured
    case discordRejected
    case discordUnauthorized
    case discordUnavailable
    case editTooLong
    case emptyFile
    case emptyMessage
    case fileContentMismatch
    case fileTooLarge
    case forumNeedsTag
    case gatewayStopped
    case idempotencyKeyReused
    case internalError
    case invalidAfter
    case invalidBefore
    case invalidApiKey
    case invalidAppKey
    case invalidBody
    case invalidEncoding
    case invalidEnvironment
    case invalidGatewaySecret
    case invalidIdempotencyKey
    case invalidInstallation
    case invalidJson
    case invalidLastEventId
    case invalidLimit
    case invalidMessageId
    case invalidMultipart
    case invalidPushToken
    case invalidText
    case invalidUserHash
    case invalidUserId
    case messageNotFound
    case messageTooLong
    case methodNotAllowed
    case missingIdempotencyKey
    case notALegacyUser
    case notAnObject
    case notFound
    case rateLimited
    case retryInProgress
    case shuttingDown
    case storeUnavailable
    case storeUnreachable
    case timeout
    case tooLargeForDiscord
    case tooManyFiles
    case unauthorized
    case unexpectedField
    case unsupportedFileType
    case unsupportedMediaType
    case uploadTooLarge
    case userClaimed
    case tooComplex
    /// An HTTP error without a code of its own (`http_405`, say).
    case http(status: Int)
    /// A code this version of the types does not know.
    case unknown(String)

    public var rawValue: String {
        switch self {
        case .attachmentNotFound: "attachment_not_found"
        case .attachmentUnavailable: "attachment_unavailable"
        case .bodyTooLarge: "body_too_large"
        case .busy: "busy"
        case .discordBusy: "discord_busy"
        case .discordMisconfigured: "discord_misconfigured"
        case .discordRejected: "discord_rejected"
        case .discordUnauthorized: "discord_unauthorized"
        case .discordUnavailable: "discord_unavailable"
        case .editTooLong: "edit_too_long"
        case .emptyFile: "empty_file"
        case .emptyMessage: "empty_message"
        case .fileContentMismatch: "file_content_mismatch"
        case .fileTooLarge: "file_too_large"
        case .forumNeedsTag: "forum_needs_tag"
        case .gatewayStopped: "gateway_stopped"
        case .idempotencyKeyReused: "idempotency_key_reused"
        case .internalError: "internal_error"
        case .invalidAfter: "invalid_after"
        case .invalidBefore: "invalid_before"
        case .invalidApiKey: "invalid_api_key"
        case .invalidAppKey: "invalid_app_key"
        case .invalidBody: "invalid_body"
        case .invalidEncoding: "invalid_encoding"
        case .invalidEnvironment: "invalid_environment"
        case .invalidGatewaySecret: "invalid_gateway_secret"
        case .invalidIdempotencyKey: "invalid_idempotency_key"
        case .invalidInstallation: "invalid_installation"
        case .invalidJson: "invalid_json"
        case .invalidLastEventId: "invalid_last_event_id"
        case .invalidLimit: "invalid_limit"
        case .invalidMessageId: "invalid_message_id"
        case .invalidMultipart: "invalid_multipart"
        case .invalidPushToken: "invalid_push_token"
        case .invalidText: "invalid_text"
        case .invalidUserHash: "invalid_user_hash"
        case .invalidUserId: "invalid_user_id"
        case .messageNotFound: "message_not_found"
        case .messageTooLong: "message_too_long"
        case .methodNotAllowed: "method_not_allowed"
        case .missingIdempotencyKey: "missing_idempotency_key"
        case .notALegacyUser: "not_a_legacy_user"
        case .notAnObject: "not_an_object"
        case .notFound: "not_found"
        case .rateLimited: "rate_limited"
        case .retryInProgress: "retry_in_progress"
        case .shuttingDown: "shutting_down"
        case .storeUnavailable: "store_unavailable"
        case .storeUnreachable: "store_unreachable"
        case .timeout: "timeout"
        case .tooLargeForDiscord: "too_large_for_discord"
        case .tooManyFiles: "too_many_files"
        case .unauthorized: "unauthorized"
        case .unexpectedField: "unexpected_field"
        case .unsupportedFileType: "unsupported_file_type"
        case .unsupportedMediaType: "unsupported_media_type"
        case .uploadTooLarge: "upload_too_large"
        case .userClaimed: "user_claimed"
        case .tooComplex: "too_complex"
        case .http(let status): "http_\(status)"
        case .unknown(let code): code
        }
    }

    public init(rawValue: String) {
        self =
            switch rawValue {
        case "attachment_not_found": .attachmentNotFound
        case "attachment_unavailable": .attachmentUnavailable
        case "body_too_large": .bodyTooLarge
        case "busy": .busy
        case "discord_busy": .discordBusy
        case "discord_misconfigured": .discordMisconfigured
        case "discord_rejected": .discordRejected
        case "discord_unauthorized": .discordUnauthorized
        case "discord_unavailable": .discordUnavailable
        case "edit_too_long": .editTooLong
        case "empty_file": .emptyFile
        case "empty_message": .emptyMessage
        case "file_content_mismatch": .fileContentMismatch
        case "file_too_large": .fileTooLarge
        case "forum_needs_tag": .forumNeedsTag
        case "gateway_stopped": .gatewayStopped
        case "idempotency_key_reused": .idempotencyKeyReused
        case "internal_error": .internalError
        case "invalid_after": .invalidAfter
        case "invalid_before": .invalidBefore
        case "invalid_api_key": .invalidApiKey
        case "invalid_app_key": .invalidAppKey
        case "invalid_body": .invalidBody
        case "invalid_encoding": .invalidEncoding
        case "invalid_environment": .invalidEnvironment
        case "invalid_gateway_secret": .invalidGatewaySecret
        case "invalid_idempotency_key": .invalidIdempotencyKey
        case "invalid_installation": .invalidInstallation
        case "invalid_json": .invalidJson
        case "invalid_last_event_id": .invalidLastEventId
        case "invalid_limit": .invalidLimit
        case "invalid_message_id": .invalidMessageId
        case "invalid_multipart": .invalidMultipart
        case "invalid_push_token": .invalidPushToken
        case "invalid_text": .invalidText
        case "invalid_user_hash": .invalidUserHash
        case "invalid_user_id": .invalidUserId
        case "message_not_found": .messageNotFound
        case "message_too_long": .messageTooLong
        case "method_not_allowed": .methodNotAllowed
        case "missing_idempotency_key": .missingIdempotencyKey
        case "not_a_legacy_user": .notALegacyUser
        case "not_an_object": .notAnObject
        case "not_found": .notFound
        case "rate_limited": .rateLimited
        case "retry_in_progress": .retryInProgress
        case "shutting_down": .shuttingDown
        case "store_unavailable": .storeUnavailable
        case "store_unreachable": .storeUnreachable
        case "timeout": .timeout
        case "too_large_for_discord": .tooLargeForDiscord
        case "too_many_files": .tooManyFiles
        case "unauthorized": .unauthorized
        case "unexpected_field": .unexpectedField
        case "unsupported_file_type": .unsupportedFileType
        case "unsupported_media_type": .unsupportedMediaType
        case "upload_too_large": .uploadTooLarge
        case "user_claimed": .userClaimed
            case "too_complex": .tooComplex
            default:
                if rawValue.hasPrefix("http_"), let status = Int(rawValue.dropFirst(5)) { .http(status: status) } else { .unknown(rawValue) }
            }
    }

    public var description: String { rawValue }

    /// Every code with a name of its own.
    public static let known: [ErrorCode] = [
        .attachmentNotFound,
        .attachmentUnavailable,
        .bodyTooLarge,
        .busy,
        .discordBusy,
        .discordMisconfigured,
        .discordRejected,
        .discordUnauthorized,
        .discordUnavailable,
        .editTooLong,
        .emptyFile,
        .emptyMessage,
        .fileContentMismatch,
        .fileTooLarge,
        .forumNeedsTag,
        .gatewayStopped,
        .idempotencyKeyReused,
        .internalError,
        .invalidAfter,
        .invalidBefore,
        .invalidApiKey,
        .invalidAppKey,
        .invalidBody,
        .invalidEncoding,
        .invalidEnvironment,
        .invalidGatewaySecret,
        .invalidIdempotencyKey,
        .invalidInstallation,
        .invalidJson,
        .invalidLastEventId,
        .invalidLimit,
        .invalidMessageId,
        .invalidMultipart,
        .invalidPushToken,
        .invalidText,
        .invalidUserHash,
        .invalidUserId,
        .messageNotFound,
        .messageTooLong,
        .methodNotAllowed,
        .missingIdempotencyKey,
        .notALegacyUser,
        .notAnObject,
        .notFound,
        .rateLimited,
        .retryInProgress,
        .shuttingDown,
        .storeUnavailable,
        .storeUnreachable,
        .timeout,
        .tooLargeForDiscord,
        .tooManyFiles,
        .unauthorized,
        .unexpectedField,
        .unsupportedFileType,
        .unsupportedMediaType,
        .uploadTooLarge,
        .userClaimed,
        .tooComplex,
    ]

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
