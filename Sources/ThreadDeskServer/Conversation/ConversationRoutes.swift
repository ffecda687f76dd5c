import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `/v1/messages`: send (text, or files as multipart), read, edit and delete.
struct ConversationRoutes: Sendable {
    let conversation: ConversationService
    let editor: MessageEditor
    let uploads: UploadReader
    let quotas: Quotas

    func register(on groups: V1Groups) {
        // An attested device signs the sends that cost most: a user's first (a new forum thread)
        // and uploads.
        let limit = uploads.settings.maxTotalBytes + 1024 * 1024
        // The upload budget is charged from the declared size before the body is read (or a slot taken).
        let sends = groups.users(charging: { .send($0) }).add(middleware: UploadBudget(quotas: quotas, limit: uploads.settings.maxTotalBytes + UploadReader.overhead))
        groups.asserting(sends, limit: limit, gate: (uploads.gate, uploads.settings.largeUpload)) { request, context in
            guard request.method == .post else { return false }
            let multipart = request.headers[.contentType]?.lowercased().hasPrefix("multipart/") ?? false
            // A user whose first message was accepted already has their thread coming.
            return multipart || (try? context.user()).map { $0.threadID == nil && $0.pendingThread == nil } ?? true
        }
        .post("messages", use: send).patch("messages/:id", use: edit).delete("messages/:id", use: delete)
        groups.readers(charging: { .read($0) }).get("messages", use: messages)
    }

    @Sendable func send(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        guard let key = request.headers[.idempotencyKey] else {
            throw APIError.badRequest(.missingIdempotencyKey, "Send an Idempotency-Key header, the same on every retry of one message.")
        }
        guard IdempotencyKey.isValid(key) else {
            throw APIError.badRequest(.invalidIdempotencyKey, "Idempotency-Key must be 1–255 visible ASCII characters.")
        }
        let address = quotas.clientAddress(request, context)
        let mayStartThread = context.mayStartThread(attestMode: quotas.attestMode)
        let message: SupportMessage
        let type = request.headers[.contentType] ?? ""
        if type.lowercased().hasPrefix("multipart/") {
            guard let boundary = MultipartBody.boundary(contentType: type) else {
                throw APIError.badRequest(.invalidMultipart, "Send files as multipart/form-data with a valid boundary.")
            }
            let upload = try await uploads.read(
                request, boundary: boundary, for: quotas.largeBodyHolder(user, request, context), admitted: context.holdsLargeUploadSlot)
            message = try await conversation.send(
                upload.text, files: upload.files, filesFingerprint: upload.fingerprint, idempotencyKey: key, for: user, from: address,
                mayStartThread: mayStartThread)
        } else {
            let body = try await request.decode(MessageRequest.self, limit: Request.smallBodyLimit)
            if let suggestion = body.suggestionId, Snowflake(suggestion) == nil {
                throw APIError.badRequest(.invalidSuggestionId, "suggestionId must be the id of a suggestion (digits).")
            }
            message = try await conversation.send(
                try APIError.validText(body.content), suggestionID: body.suggestionId, idempotencyKey: key, for: user, from: address,
                mayStartThread: mayStartThread)
        }
        return try jsonResponse(message, status: .created)
    }

    @Sendable func edit(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        let id = try Self.messageID(context)
        let body = try await request.decode(MessageRequest.self, limit: Request.smallBodyLimit)
        return try jsonResponse(try await editor.edit(id, text: try APIError.validText(body.content), for: user))
    }

    @Sendable func delete(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        try await editor.delete(try Self.messageID(context), for: try context.user().id)
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
        func snowflake(_ name: String) throws -> Snowflake? {
            guard let value = query[name[...]].map(String.init), !value.isEmpty else { return nil }
            guard let id = Snowflake(value) else { throw APIError.badRequest(ErrorCode(rawValue: "invalid_\(name)"), "\(name) must be a message id.") }
            return id
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
        return try jsonResponse(try await conversation.page(for: record, after: after, before: before, limit: limit))
    }
}

extension HTTPField.Name {
    static let appKey = HTTPField.Name(APIHeader.appKey)!
    static let apiKey = HTTPField.Name("x-api-key")!
    static let idempotencyKey = HTTPField.Name(APIHeader.idempotencyKey)!
}
