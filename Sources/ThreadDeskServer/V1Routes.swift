import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `/v1`: the API support widgets call.
struct V1Routes: Sendable {
    let service: SupportService

    static let smallBodyLimit = 64 * 1024
    static let diagnosticsLimit = 8 * 1024 * 1024

    /// Each route's group says who may call it (the middleware authenticates) and which limits
    /// it charges (before the handler runs); the handlers only do the work.
    func register(on router: Router<ThreadDeskRequestContext>) {
        let quotas = service.quotas
        let app = router.group("v1").add(middleware: AppAuthentication(appKey: service.configuration.appKey))
        app.group().add(middleware: LimitMiddleware(quotas: quotas) { _ in .session }).post("session", use: openSession)

        let users = router.group("v1").add(middleware: UserAuthentication(service: service))
        func limited(_ cost: @escaping @Sendable (UserID) -> Quotas.Cost) -> RouterGroup<ThreadDeskRequestContext> {
            users.group().add(middleware: LimitMiddleware(quotas: quotas) { context in cost(try context.user().id) })
        }
        users.delete("session", use: closeSession)
        users.delete("push-token", use: deletePushToken)
        users.post("typing", use: typing)
        limited { .send($0) }.post("messages", use: postMessage).patch("messages/:id", use: editMessage).delete("messages/:id", use: deleteMessage)
        limited { .read($0) }.get("messages", use: messages).get("events", use: events).get("unread", use: unread)
            .get("attachments/:id", use: attachment)
        limited { .diagnostics($0) }.post("diagnostics", use: uploadDiagnostics)
        limited { .installation($0) }.put("installation", use: updateInstallation)
        limited { .update($0) }.put("push-token", use: setPushToken).post("read", use: read)
    }

    @Sendable func openSession(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let body = try await request.decode(SessionRequest.self, limit: Self.smallBodyLimit, invalid: ["installation": .invalidInstallation])
        let userID = try body.userId.map { raw in
            guard let id = UserID(raw) else {
                throw APIError.badRequest(.invalidUserId, "userId must be 1–128 characters of letters, digits and - _ . : @")
            }
            return id
        }
        if let hash = body.userHash, hash.count > 128 { throw APIError.badRequest(.invalidUserHash, "userHash is too long.") }
        let installation = try body.installation.map { try Self.installation(JSON($0)) }
        let session = try await service.openSession(
            userID: userID, userHash: body.userHash, presentedToken: context.presentedToken, installation: installation)
        return try jsonResponse(session, status: .created)
    }

    @Sendable func closeSession(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        try await service.closeSession(try context.user(), token: try context.userToken())
        return Response(status: .noContent)
    }

    @Sendable func postMessage(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        guard let key = request.headers[.idempotencyKey] else {
            throw APIError.badRequest(.missingIdempotencyKey, "Send an Idempotency-Key header, the same on every retry of one message.")
        }
        guard IdempotencyKey.isValid(key) else {
            throw APIError.badRequest(.invalidIdempotencyKey, "Idempotency-Key must be 1–255 visible ASCII characters.")
        }
        let stored: StoredResponse
        let type = request.headers[.contentType] ?? ""
        if type.lowercased().hasPrefix("multipart/") {
            guard let boundary = MultipartBody.boundary(contentType: type) else {
                throw APIError.badRequest(.invalidMultipart, "Send files as multipart/form-data with a valid boundary.")
            }
            let upload = try await service.uploads.read(request, boundary: boundary)
            try await service.quotas.charge(.upload(user, bytes: upload.totalBytes), address: address(request, context))
            stored = try await service.postMessage(
                upload.text, files: upload.files, filesFingerprint: upload.fingerprint, idempotencyKey: key, for: user,
                from: address(request, context))
        } else {
            let body = try await request.decode(MessageRequest.self, limit: Self.smallBodyLimit)
            let text = try APIError.validText(body.content)
            stored = try await service.postMessage(text, idempotencyKey: key, for: user, from: address(request, context))
        }
        return jsonResponse(raw: stored.body, status: .init(code: stored.status))
    }

    @Sendable func editMessage(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        let id = try Self.messageID(context)
        let body = try await request.decode(MessageRequest.self, limit: Self.smallBodyLimit)
        let text = try APIError.validText(body.content)
        return try jsonResponse(try await service.editMessage(id, text: text, for: user))
    }

    @Sendable func deleteMessage(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        try await service.deleteMessage(try Self.messageID(context), for: user)
        return Response(status: .noContent)
    }

    static func messageID(_ context: ThreadDeskRequestContext) throws -> Snowflake {
        guard let raw = context.parameters.get("id"), let id = Snowflake(raw) else {
            throw APIError.badRequest(.invalidMessageId, "The message id must be a Discord message id (digits).")
        }
        return id
    }

    @Sendable func messages(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let record = try context.user()
        let query = request.uri.queryParameters
        func snowflake(_ name: String) throws -> String? {
            guard let value = query[name[...]].map(String.init), !value.isEmpty else { return nil }
            guard Snowflake(value) != nil else { throw APIError.badRequest(ErrorCode(rawValue: "invalid_\(name)"), "\(name) must be a message id.") }
            return value
        }
        let after = try snowflake("after")
        let before = try snowflake("before")
        var limit = 50
        if let raw = query["limit"] {
            guard let value = Int(raw), (1...100).contains(value) else {
                throw APIError.badRequest(.invalidLimit, "limit must be a whole number from 1 to 100.")
            }
            limit = value
        }
        return try jsonResponse(try await service.messages(for: record, after: after, before: before, limit: limit))
    }

    @Sendable func uploadDiagnostics(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        let key = request.headers[.idempotencyKey]
        if let key, !IdempotencyKey.isValid(key) {
            throw APIError.badRequest(.invalidIdempotencyKey, "Idempotency-Key must be 1–255 visible ASCII characters.")
        }
        let (bytes, document) = try await request.jsonObject(limit: Self.diagnosticsLimit)
        let result = try await service.uploadDiagnostics(
            bytes, document: document, idempotencyKey: key, for: user, from: address(request, context))
        return try jsonResponse(result, status: .created)
    }

    @Sendable func updateInstallation(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        let info = try Self.installation(try await request.jsonValue(limit: Self.smallBodyLimit).value)
        return try jsonResponse(try await service.updateInstallation(info, for: user))
    }

    @Sendable func setPushToken(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        let body = try await request.decode(PushTokenRequest.self, limit: Self.smallBodyLimit)
        guard Self.isDeviceToken(body.token) else {
            throw APIError.badRequest(.invalidPushToken, "token must be the APNs device token in hex (64 to 200 hex digits).")
        }
        guard let environment = PushEnvironment(rawValue: body.environment) else {
            throw APIError.badRequest(.invalidEnvironment, "environment must be \"production\" or \"development\".")
        }
        try await service.setPushToken(body.token.lowercased(), environment: environment, for: user)
        return Response(status: .noContent)
    }

    @Sendable func deletePushToken(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        try await service.setPushToken(nil, environment: nil, for: user)
        return Response(status: .noContent)
    }

    private func address(_ request: Request, _ context: ThreadDeskRequestContext) -> String {
        service.quotas.clientAddress(request, context)
    }

    static func installation(_ json: JSON) throws -> InstallationInfo {
        do {
            return try InstallationInfo(json: json)
        } catch .notAnObject {
            throw APIError.badRequest(.invalidInstallation, "installation must be a JSON object.")
        } catch .tooManyFields {
            throw APIError.badRequest(.invalidInstallation, "installation has more than \(InstallationInfo.maxFields) fields.")
        } catch .invalidKey {
            throw APIError.badRequest(
                .invalidInstallation, "installation keys must be 1–\(InstallationInfo.maxKeyLength) letters, digits, spaces or `_ - . /`.")
        } catch .invalidValue(let field) {
            throw APIError.badRequest(
                .invalidInstallation, "installation.\(field) must be a single-line string, number or boolean of at most \(InstallationInfo.maxValueLength) characters.")
        }
    }

    static func isDeviceToken(_ token: String) -> Bool {
        (64...200).contains(token.utf8.count) && token.allSatisfy { $0.isASCII && $0.isHexDigit }
    }
}

extension HTTPField.Name {
    static let appKey = HTTPField.Name(APIHeader.appKey)!
    static let apiKey = HTTPField.Name("x-api-key")!
    static let idempotencyKey = HTTPField.Name(APIHeader.idempotencyKey)!
}

extension JSON {
    /// The installation info of a session request, as the checks of ``InstallationInfo`` read it.
    init(_ installation: [String: InstallationValue]) {
        self = .object(
            installation.mapValues {
                switch $0 {
                case .string(let value): .string(value)
                case .number(let value): .number(value)
                case .bool(let value): .bool(value)
                }
            })
    }
}
