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

/// An error code the server answers with: its wire value, and a name for each code this version
/// knows. Extensible like postgres-nio's `PSQLError.Code`: a code a newer server adds arrives as
/// itself (compare it with `ErrorCode(rawValue:)`), and adding one never breaks an app's build,
/// because there is no exhaustive `switch` to break.
public struct ErrorCode: Sendable, Hashable, Codable, RawRepresentable, CustomStringConvertible {
    /// The code as the server writes it (`user_claimed`).
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public static let alreadyRated = ErrorCode(rawValue: "already_rated")
    /// `GET /v1/articles/{id}`, `POST /v1/articles/{id}/views`: no such article in the app's help center.
    public static let articleNotFound = ErrorCode(rawValue: "article_not_found")
    public static let attachmentNotFound = ErrorCode(rawValue: "attachment_not_found")
    public static let attachmentUnavailable = ErrorCode(rawValue: "attachment_unavailable")
    public static let bodyTooLarge = ErrorCode(rawValue: "body_too_large")
    public static let busy = ErrorCode(rawValue: "busy")
    public static let discordBusy = ErrorCode(rawValue: "discord_busy")
    public static let discordMisconfigured = ErrorCode(rawValue: "discord_misconfigured")
    public static let discordRejected = ErrorCode(rawValue: "discord_rejected")
    public static let discordUnauthorized = ErrorCode(rawValue: "discord_unauthorized")
    public static let discordUnavailable = ErrorCode(rawValue: "discord_unavailable")
    public static let editTooLong = ErrorCode(rawValue: "edit_too_long")
    public static let emptyFile = ErrorCode(rawValue: "empty_file")
    public static let emptyMessage = ErrorCode(rawValue: "empty_message")
    public static let fileContentMismatch = ErrorCode(rawValue: "file_content_mismatch")
    public static let fileTooLarge = ErrorCode(rawValue: "file_too_large")
    public static let forumNeedsTag = ErrorCode(rawValue: "forum_needs_tag")
    public static let gatewayStopped = ErrorCode(rawValue: "gateway_stopped")
    public static let idempotencyKeyReused = ErrorCode(rawValue: "idempotency_key_reused")
    public static let internalError = ErrorCode(rawValue: "internal_error")
    /// `POST /v1/activity`: the name, a property or the time broke a rule; the message names it.
    public static let invalidActivity = ErrorCode(rawValue: "invalid_activity")
    public static let invalidAfter = ErrorCode(rawValue: "invalid_after")
    /// `PUT /v1/attributes`: a key or a value broke a rule; the message names the key.
    public static let invalidAttributes = ErrorCode(rawValue: "invalid_attributes")
    public static let invalidBefore = ErrorCode(rawValue: "invalid_before")
    public static let invalidApiKey = ErrorCode(rawValue: "invalid_api_key")
    public static let invalidAppKey = ErrorCode(rawValue: "invalid_app_key")
    /// `GET /v1/articles/{id}`, `POST /v1/articles/{id}/views`: the id is no FAQ post's id (digits).
    public static let invalidArticleId = ErrorCode(rawValue: "invalid_article_id")
    public static let invalidBody = ErrorCode(rawValue: "invalid_body")
    public static let invalidCrashReport = ErrorCode(rawValue: "invalid_crash_report")
    public static let invalidDsym = ErrorCode(rawValue: "invalid_dsym")
    public static let invalidDsymsSecret = ErrorCode(rawValue: "invalid_dsyms_secret")
    public static let invalidEncoding = ErrorCode(rawValue: "invalid_encoding")
    public static let invalidEnvironment = ErrorCode(rawValue: "invalid_environment")
    public static let invalidGatewaySecret = ErrorCode(rawValue: "invalid_gateway_secret")
    public static let invalidIdempotencyKey = ErrorCode(rawValue: "invalid_idempotency_key")
    public static let invalidRating = ErrorCode(rawValue: "invalid_rating")
    public static let invalidInstallation = ErrorCode(rawValue: "invalid_installation")
    public static let invalidJson = ErrorCode(rawValue: "invalid_json")
    public static let invalidLastEventId = ErrorCode(rawValue: "invalid_last_event_id")
    public static let invalidLimit = ErrorCode(rawValue: "invalid_limit")
    public static let invalidMessageId = ErrorCode(rawValue: "invalid_message_id")
    public static let invalidMultipart = ErrorCode(rawValue: "invalid_multipart")
    public static let invalidPushToken = ErrorCode(rawValue: "invalid_push_token")
    public static let invalidQuery = ErrorCode(rawValue: "invalid_query")
    public static let invalidSuggestionId = ErrorCode(rawValue: "invalid_suggestion_id")
    public static let invalidText = ErrorCode(rawValue: "invalid_text")
    public static let invalidUserHash = ErrorCode(rawValue: "invalid_user_hash")
    public static let invalidUserId = ErrorCode(rawValue: "invalid_user_id")
    public static let lengthRequired = ErrorCode(rawValue: "length_required")
    public static let messageNotFound = ErrorCode(rawValue: "message_not_found")
    public static let messageTooLong = ErrorCode(rawValue: "message_too_long")
    public static let methodNotAllowed = ErrorCode(rawValue: "method_not_allowed")
    public static let missingIdempotencyKey = ErrorCode(rawValue: "missing_idempotency_key")
    public static let notALegacyUser = ErrorCode(rawValue: "not_a_legacy_user")
    public static let notAnObject = ErrorCode(rawValue: "not_an_object")
    public static let notFound = ErrorCode(rawValue: "not_found")
    public static let rateLimited = ErrorCode(rawValue: "rate_limited")
    /// `POST /v1/rating` when no closed conversation waits for a rating.
    public static let ratingNotRequested = ErrorCode(rawValue: "rating_not_requested")
    public static let retryInProgress = ErrorCode(rawValue: "retry_in_progress")
    /// A failed message some of whose parts reached support, edited to another text.
    public static let partlyDelivered = ErrorCode(rawValue: "partly_delivered")
    public static let shuttingDown = ErrorCode(rawValue: "shutting_down")
    public static let storeUnavailable = ErrorCode(rawValue: "store_unavailable")
    public static let storeUnreachable = ErrorCode(rawValue: "store_unreachable")
    public static let timeout = ErrorCode(rawValue: "timeout")
    public static let tooLargeForDiscord = ErrorCode(rawValue: "too_large_for_discord")
    public static let tooManyFiles = ErrorCode(rawValue: "too_many_files")
    public static let unauthorized = ErrorCode(rawValue: "unauthorized")
    public static let unexpectedField = ErrorCode(rawValue: "unexpected_field")
    public static let unsupportedFileType = ErrorCode(rawValue: "unsupported_file_type")
    public static let unsupportedMediaType = ErrorCode(rawValue: "unsupported_media_type")
    public static let uploadInProgress = ErrorCode(rawValue: "upload_in_progress")
    public static let uploadTooLarge = ErrorCode(rawValue: "upload_too_large")
    public static let userClaimed = ErrorCode(rawValue: "user_claimed")
    public static let tooComplex = ErrorCode(rawValue: "too_complex")
    // App Attest (`APP_ATTEST`): what a session or request lacks, and which rule an attestation or
    // an assertion broke.
    public static let attestationRequired = ErrorCode(rawValue: "attestation_required")
    public static let assertionRequired = ErrorCode(rawValue: "assertion_required")
    public static let challengeUnknown = ErrorCode(rawValue: "challenge_unknown")
    public static let challengeUsed = ErrorCode(rawValue: "challenge_used")
    public static let challengeExpired = ErrorCode(rawValue: "challenge_expired")
    public static let attestationMalformed = ErrorCode(rawValue: "attestation_malformed")
    public static let attestationUntrusted = ErrorCode(rawValue: "attestation_untrusted")
    public static let attestationNonceMismatch = ErrorCode(rawValue: "attestation_nonce_mismatch")
    public static let attestationAppIdMismatch = ErrorCode(rawValue: "attestation_app_id_mismatch")
    public static let attestationCounterNotZero = ErrorCode(rawValue: "attestation_counter_not_zero")
    public static let attestationWrongEnvironment = ErrorCode(rawValue: "attestation_wrong_environment")
    public static let attestationKeyIdMismatch = ErrorCode(rawValue: "attestation_key_id_mismatch")
    public static let attestationCredentialIdMismatch = ErrorCode(rawValue: "attestation_credential_id_mismatch")
    public static let attestationKeyKnown = ErrorCode(rawValue: "attestation_key_known")
    public static let assertionMalformed = ErrorCode(rawValue: "assertion_malformed")
    public static let assertionInvalid = ErrorCode(rawValue: "assertion_invalid")
    public static let assertionAppIdMismatch = ErrorCode(rawValue: "assertion_app_id_mismatch")
    public static let assertionReplayed = ErrorCode(rawValue: "assertion_replayed")
    public static let assertionUnknownKey = ErrorCode(rawValue: "assertion_unknown_key")
    public static let assertionWrongDevice = ErrorCode(rawValue: "assertion_wrong_device")

    /// An HTTP error without a code of its own (`http_405`, say).
    public static func http(status: Int) -> ErrorCode { ErrorCode(rawValue: "http_\(status)") }

    /// The status of an ``http(status:)`` code, nil for any other.
    public var httpStatus: Int? {
        guard rawValue.hasPrefix("http_") else { return nil }
        return Int(rawValue.dropFirst(5))
    }

    /// Whether this version of the types has a name for the code.
    public var isKnown: Bool { Self.known.contains(self) }

    public var description: String { rawValue }

    /// Every code with a name of its own.
    public static let known: [ErrorCode] = [
        .alreadyRated,
        .articleNotFound,
        .invalidArticleId,
        .invalidActivity,
        .invalidAttributes,
        .invalidRating,
        .ratingNotRequested,
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
        .invalidCrashReport,
        .invalidDsym,
        .invalidDsymsSecret,
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
        .lengthRequired,
        .messageNotFound,
        .messageTooLong,
        .methodNotAllowed,
        .missingIdempotencyKey,
        .notALegacyUser,
        .notAnObject,
        .notFound,
        .partlyDelivered,
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
        .uploadInProgress,
        .uploadTooLarge,
        .userClaimed,
        .tooComplex,
        .attestationRequired,
        .assertionRequired,
        .challengeUnknown,
        .challengeUsed,
        .challengeExpired,
        .attestationMalformed,
        .attestationUntrusted,
        .attestationNonceMismatch,
        .attestationAppIdMismatch,
        .attestationCounterNotZero,
        .attestationWrongEnvironment,
        .attestationKeyIdMismatch,
        .attestationCredentialIdMismatch,
        .attestationKeyKnown,
        .assertionMalformed,
        .assertionInvalid,
        .assertionAppIdMismatch,
        .assertionReplayed,
        .assertionUnknownKey,
        .assertionWrongDevice,
    ]

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
