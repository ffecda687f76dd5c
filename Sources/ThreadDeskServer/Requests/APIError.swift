import AppAttest
import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// An error as the API reports it: `{"error": {"code", "message"}}` with the right status.
public struct APIError: Error, HTTPResponseError, Sendable, CustomStringConvertible {
    public let status: HTTPResponse.Status
    public let code: ErrorCode
    public let message: String
    public var retryAfterSeconds: Int?

    public init(_ status: HTTPResponse.Status, _ code: ErrorCode, _ message: String, retryAfterSeconds: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let retryAfterSeconds { headers[.retryAfter] = String(retryAfterSeconds) }
        let body = try JSONEncoder().encode(ErrorBody(code: code, message: message))
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(data: body)))
    }

    static func badRequest(_ code: ErrorCode, _ message: String) -> APIError { APIError(.badRequest, code, message) }
    static let unauthorized = APIError(.unauthorized, .unauthorized, "A valid bearer token is required: open a session with POST /v1/session.")
    static let badAppKey = APIError(.unauthorized, .invalidAppKey, "The X-App-Key header is missing or wrong.")
    static let badAPIKey = APIError(.unauthorized, .invalidApiKey, "The x-api-key header is missing or wrong.")
    static let notFound = APIError(.notFound, .notFound, "No such route.")

    /// A user's message text as it will be posted, or the 400 saying what is wrong with it.
    static func validText(_ raw: String) throws(APIError) -> String {
        switch MessageText.validate(raw) {
        case .success(let text):
            return text
        case .failure(.empty):
            throw .badRequest(.emptyMessage, "content must not be empty.")
        case .failure(.tooLong(let count)):
            throw .badRequest(.messageTooLong, "content has \(count) characters; the limit is \(MessageText.maxCharacters).")
        case .failure(.tooLongForDiscord(let units)):
            throw .badRequest(
                .messageTooLong, "content is \(units) UTF-16 units long; the limit is \(MessageText.maxUTF16Units).")
        case .failure(.characterTooComplex):
            throw .badRequest(
                .invalidText, "content has a character of more than \(MessageText.maxScalarsPerCharacter) Unicode scalars.")
        case .failure(.controlCharacter(let scalar)):
            throw .controlCharacter(scalar, in: "content")
        }
    }

    /// The 400 for a text field holding a control character: the text is refused whole, never kept cut.
    static func controlCharacter(_ scalar: Unicode.Scalar, in field: String) -> APIError {
        .badRequest(
            .invalidText, "\(field) holds the control character \(ControlCharacters.name(scalar)); only line breaks and tabs are allowed.")
    }

    static func tooLarge(limit: Int) -> APIError {
        APIError(.contentTooLarge, .bodyTooLarge, "The request body is larger than \(limit) bytes.")
    }

    /// What a Discord failure means to the widget. Discord's own words stay in our logs.
    init(_ error: DiscordError) {
        self = Self.from(error)
    }

    private static func from(_ error: DiscordError) -> APIError {
        switch error {
        case .rateLimited(let retryAfter):
            return APIError(.serviceUnavailable, .discordBusy, "Discord is rate limiting us; try again shortly.",
                            retryAfterSeconds: max(1, Int(retryAfter.components.seconds) + 1))
        case .unavailable, .invalidResponse:
            return APIError(.serviceUnavailable, .discordUnavailable, "Discord is not answering; try again shortly.",
                            retryAfterSeconds: 5)
        case .api(let api):
            switch api.status {
            case 401, 403:
                return APIError(.serviceUnavailable, .discordMisconfigured, "The support inbox is misconfigured.", retryAfterSeconds: 60)
            case 413:
                return APIError(.contentTooLarge, .tooLargeForDiscord, "Discord refused the upload as too large.")
            default:
                return APIError(.badGateway, .discordRejected, "Discord refused the request (code \(api.code.rawValue)).")
            }
        }
    }
}

extension APIError {
    /// What a refusal of the services means on the wire: the one mapping from domain errors to
    /// HTTP statuses and error codes.
    init(_ failure: SupportFailure) {
        switch failure {
        case .notAuthenticated:
            self = .unauthorized
        case .invalidUserHash:
            self.init(.forbidden, .invalidUserHash, "userHash must be the HMAC-SHA256 of userId with the app's identity secret.")
        case .userClaimed:
            self.init(.conflict, .userClaimed, "This userId is in use; present one of its tokens (or its userHash) to open another session.")
        case .notALegacyUser:
            self.init(.forbidden, .notALegacyUser, "This user has a /v1 session; the legacy key cannot act for them.")
        case .idempotencyKeyReused:
            self.init(.unprocessableContent, .idempotencyKeyReused, "This Idempotency-Key was used for a different message.")
        case .alreadySent:
            self.init(.conflict, .retryInProgress, "This message was already sent; fetch messages to see it.")
        case .messageNotFound:
            self.init(.notFound, .messageNotFound, "No message of yours has this id.")
        case .notInConversation:
            self.init(.notFound, .messageNotFound, "No message with this id in your conversation.")
        case .editTooLong(let needed, let original):
            self.init(
                .unprocessableContent, .editTooLong,
                "The new text needs \(needed) Discord messages; the original used \(original). Send it as a new message.")
        case .attachmentNotFound(let gone):
            self.init(.notFound, .attachmentNotFound, gone ? "Discord no longer has this file." : "No attachment with this id in your conversation.")
        case .attachmentUnavailable:
            self.init(.serviceUnavailable, .attachmentUnavailable, "The file cannot be fetched from Discord right now.", retryAfterSeconds: 5)
        case .forumNeedsTag:
            self.init(.serviceUnavailable, .forumNeedsTag, "The support forum requires a tag but has none.", retryAfterSeconds: 60)
        case .outboxFull(let scope, let wait):
            let seconds = max(1, Int((wait / .seconds(1)).rounded(.up)))
            self.init(
                .serviceUnavailable, .busy, "Too many messages wait for Discord (\(scope)); try again in \(seconds) s.",
                retryAfterSeconds: seconds)
        case .delivering:
            self.init(.conflict, .retryInProgress, "This message is being delivered to support right now; try again in a moment.", retryAfterSeconds: 2)
        case .partlyDelivered:
            self.init(
                .conflict, .partlyDelivered,
                "Part of this message reached support before Discord refused the rest: retry it with the same text, or delete it.")
        case .limitReached(let name, let limit, let wait):
            let seconds = max(1, Int((wait / .seconds(1)).rounded(.up)))
            self.init(
                .tooManyRequests, .rateLimited, "Too many requests (\(name), \(limit)); try again in \(seconds) s.", retryAfterSeconds: seconds)
        }
    }
}

extension APIError {
    /// What an App Attest refusal means on the wire: each broken rule its own code. Malformed
    /// input is 400; anything not proven genuine is 401, so a client knows to attest (again).
    init(_ failure: DeviceCheckFailure) {
        switch failure {
        case .attestationRequired:
            self.init(.unauthorized, .attestationRequired, "This server serves attested devices only: attest a key (POST /v1/attest/challenge, then POST /v1/session with attestation).")
        case .assertionRequired:
            self.init(.unauthorized, .assertionRequired, "This request needs an App Attest assertion in the X-App-Attest-Assertion header.")
        case .challenge(.used):
            self.init(.unauthorized, .challengeUsed, "This challenge was used already; get a new one from POST /v1/attest/challenge.")
        case .challenge(.expired):
            self.init(.unauthorized, .challengeExpired, "This challenge expired; get a new one from POST /v1/attest/challenge.")
        case .challenge:
            self.init(.unauthorized, .challengeUnknown, "This challenge was not issued here; get one from POST /v1/attest/challenge.")
        case .attestation(let rule):
            switch rule {
            case .malformed(let detail): self.init(.badRequest, .attestationMalformed, "The attestation is malformed: \(detail).")
            case .untrustedChain: self.init(.unauthorized, .attestationUntrusted, "The attestation's certificates do not lead to Apple's App Attestation root.")
            case .nonceMismatch: self.init(.unauthorized, .attestationNonceMismatch, "The attestation's nonce does not match its authenticator data and challenge.")
            case .rpIDMismatch: self.init(.unauthorized, .attestationAppIdMismatch, "The attestation is for another app.")
            case .counterNotZero: self.init(.unauthorized, .attestationCounterNotZero, "The attestation's counter is not 0.")
            case .wrongEnvironment: self.init(.unauthorized, .attestationWrongEnvironment, "The key was made in an App Attest environment this server does not accept.")
            case .keyIDMismatch: self.init(.unauthorized, .attestationKeyIdMismatch, "keyId is not the SHA-256 of the attested public key.")
            case .credentialIDMismatch: self.init(.unauthorized, .attestationCredentialIdMismatch, "The attestation's credential id is not keyId.")
            case .invalidSignature, .staleCounter: self.init(.unauthorized, .attestationUntrusted, "The attestation does not verify.")
            }
        case .assertion(let rule):
            switch rule {
            // A credential that cannot be read, as an unreadable bearer token: not authenticated.
            case .malformed(let detail): self.init(.unauthorized, .assertionMalformed, "The assertion is malformed: \(detail).")
            case .rpIDMismatch: self.init(.unauthorized, .assertionAppIdMismatch, "The assertion is for another app.")
            case .staleCounter: self.init(.unauthorized, .assertionReplayed, "The assertion's counter is not greater than the last one: a replay.")
            default: self.init(.unauthorized, .assertionInvalid, "The assertion's signature does not verify for this request.")
            }
        case .keyAlreadyAttested:
            self.init(.conflict, .attestationKeyKnown, "This key was attested already: send assertions with it, or attest a new key.")
        case .unknownKey:
            self.init(.unauthorized, .assertionUnknownKey, "No attested key has this keyId: attest it first.")
        case .wrongDevice:
            self.init(.forbidden, .assertionWrongDevice, "The assertion is by another key than this session's device.")
        case .keyNoLongerTrusted:
            self.init(.unauthorized, .attestationRequired, "This key was attested under a root or in an environment this server no longer accepts: attest a new key (POST /v1/attest/challenge, then POST /v1/session with attestation).")
        }
    }
}
