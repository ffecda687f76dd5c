import DiscordREST
import Foundation
import Hummingbird
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// The reference system's routes, wire-compatible with its iOS client. Mounted only when
/// `LEGACY_API_KEY` is set. The client identifies users by id alone, so the shared key is
/// the only protection: new apps should use `/v1`.
struct LegacyRoutes: Sendable {
    let legacy: LegacyService
    let conversation: ConversationService
    let devices: DeviceService
    let diagnostics: DiagnosticsService
    let quotas: Quotas
    /// Each app's legacy key names the app whose users the ids are.
    let catalog: AppCatalog

    /// Behind the legacy key; a route whose user is in its path is charged before its handler
    /// (a message's user is in its body, so the handler charges it once the body is read).
    func register(on router: Router<ThreadDeskRequestContext>) {
        let legacy = router.group().add(middleware: AppKeyAuthentication(catalog: catalog, legacy: true))
        legacy.post("new-message", use: newMessage)
        legacy.group().add(middleware: LimitMiddleware(quotas: quotas) { context in .read(try Self.userID(context.parameters.get("userId") ?? "", context: context)) })
            .get("messages/:userId", use: messages)
        legacy.group()
            .add(middleware: LimitMiddleware(quotas: quotas) { context in
                .diagnostics(try Self.userID(String((context.parameters.get("key") ?? "").prefix(11)), context: context))
            })
            .post("upload-diagnostics/:key", use: uploadDiagnostics)
    }

    private struct NewMessage: Decodable {
        struct Installation: Decodable {
            var userId: String?
            var buildVersion: String?
            var osPlatform: String?
            var osVersion: String?
        }

        var content: String
        var title: String?
        var apnsToken: String?
        var userId: String
        var installationInfo: Installation?
    }

    @Sendable func newMessage(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let body = try await request.decode(NewMessage.self, limit: Request.smallBodyLimit)
        let user = try Self.userID(body.userId, context: context)
        let address = quotas.clientAddress(request, context)
        try await quotas.charge(.send(user), address: address)
        let text = try APIError.validText(body.content)
        if let token = body.apnsToken, !DeviceRoutes.isDeviceToken(token) {
            throw APIError.badRequest(.invalidPushToken, "apnsToken must be the APNs device token in hex.")
        }
        // The same checks as /v1's (one line, short): these values name the thread and make a note.
        let installation = try body.installationInfo.map { info in
            try DeviceRoutes.installation(
                .object(["buildVersion": info.buildVersion, "osPlatform": info.osPlatform, "osVersion": info.osVersion].compactMapValues { $0.map(JSON.string) }))
        }
        try await self.legacy.ensureUser(user)
        if let installation { _ = try await devices.updateInstallation(installation, for: user) }
        if let token = body.apnsToken { try await devices.setPushToken(token.lowercased(), environment: .production, for: user) }
        // The legacy client sends no idempotency key; a fresh one per request still gives every
        // part its own nonce.
        let message = try await conversation.send(text, idempotencyKey: "legacy-\(UUID().uuidString)", for: user, from: address)
        return try jsonResponse(["success": "true", "messageId": message.id])
    }

    @Sendable func messages(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try Self.userID(context.parameters.get("userId") ?? "", context: context)
        let after = request.uri.queryParameters["after"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
        let cursor = try after.map { raw in
            guard let id = Snowflake(raw) else { throw APIError.badRequest(.invalidAfter, "after must be a message id.") }
            return id
        }
        return try jsonResponse(try await self.legacy.messages(for: user, after: cursor))
    }

    @Sendable func uploadDiagnostics(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let key = context.parameters.get("key") ?? ""
        let user = try Self.userID(String(key.prefix(11)), context: context)
        let address = quotas.clientAddress(request, context)
        let (bytes, document, slot) = try await request.jsonObject(
            limit: DiagnosticsRoutes.limit, gate: diagnostics.largeBodies, for: quotas.largeBodyHolder(user, request, context))
        defer { slot?.leave() }
        try await self.legacy.ensureUser(user)
        let idempotency = IdempotencyKey.isValid(key) ? "legacy-upload-\(key)" : nil
        let result = try await diagnostics.upload(bytes, document: document, idempotencyKey: idempotency, for: user, from: address)
        return try jsonResponse(["success": "true", "filename": result.filename])
    }

    /// Legacy ids are the reference app's `xxx-xxx-xxx`, of the app whose legacy key came.
    static func userID(_ raw: String, context: ThreadDeskRequestContext) throws -> UserID {
        guard let id = UserID(raw), id.isLegacyShaped else {
            throw APIError.badRequest(.invalidUserId, "userId must have the form xxx-xxx-xxx.")
        }
        return UserID(app: try context.keyedApp().id, local: id)
    }
}

/// A message shaped as the reference system returned it: Discord's own fields, with the app
/// user's messages showing the bot as author.
struct LegacyMessage: Codable, Sendable, Hashable {
    /// - Parameter bot: The bot, author of the user's messages the outbox keeps (Discord has no
    ///   author for them yet).
    init(_ message: MirroredMessage, bot: (id: Snowflake, username: String)? = nil) {
        id = message.id.description
        // The reference system knew no assistant: its answers have support's shape (a webhook author).
        content = message.author != .user ? NoteMarkers.shownReply(message.content) : message.content
        if message.author == .user, message.authorID == nil, let bot {
            author = Author(id: bot.id.description, username: bot.username)
        } else {
            author = Author(id: message.authorID?.description ?? "", username: message.authorUsername)
        }
        type = message.type
        timestamp = message.createdAt
        edited_timestamp = message.editedAt
        attachments = message.attachments.map {
            Attachment(
                id: $0.id.description, filename: $0.filename, size: $0.size, url: $0.url, proxy_url: $0.proxyURL,
                content_type: $0.contentType)
        }
    }

    struct Author: Codable, Sendable, Hashable {
        var id: String
        var username: String
    }

    struct Attachment: Codable, Sendable, Hashable {
        var id: String
        var filename: String
        var size: Int
        var url: String
        var proxy_url: String
        var content_type: String?
    }

    var id: String
    var content: String
    var author: Author
    var type: Int
    var timestamp: String
    var edited_timestamp: String?
    var attachments: [Attachment]
}
