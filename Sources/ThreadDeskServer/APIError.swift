import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import ThreadDeskCore
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
        }
    }

    static func tooLarge(limit: Int) -> APIError {
        APIError(.contentTooLarge, .bodyTooLarge, "The request body is larger than \(limit) bytes.")
    }

    /// What a Discord failure means to the widget. Discord's own words stay in our logs.
    static func from(_ error: DiscordError) -> APIError {
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

/// Runs Discord calls, reporting their failure as the API's error: the one place a `DiscordError`
/// becomes an `APIError` (through `APIError.from`).
func discordCall<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as DiscordError {
        throw APIError.from(error)
    }
}
