import DiscordREST
import Hummingbird
import ThreadDeskCore
import ThreadDeskWire

/// `/v1/session`: open one with the app key (a new user, or an id proven by a token or its
/// `userHash`), close one with its token.
struct SessionRoutes: Sendable {
    let sessions: SessionService

    func register(on groups: V1Groups) {
        groups.app(charging: .session).post("session", use: open)
        groups.users.delete("session", use: close)
    }

    @Sendable func open(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let body = try await request.decode(SessionRequest.self, limit: Request.smallBodyLimit, invalid: ["installation": .invalidInstallation])
        let userID = try body.userId.map { raw in
            guard let id = UserID(raw) else {
                throw APIError.badRequest(.invalidUserId, "userId must be 1–128 characters of letters, digits and - _ . : @")
            }
            return id
        }
        if let hash = body.userHash, hash.count > 128 { throw APIError.badRequest(.invalidUserHash, "userHash is too long.") }
        let installation = try body.installation.map { try DeviceRoutes.installation(JSON($0)) }
        let session = try await sessions.open(
            userID: userID, userHash: body.userHash, presentedToken: context.presentedToken, installation: installation)
        return try jsonResponse(session, status: .created)
    }

    @Sendable func close(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        try await sessions.close(try context.user(), token: try context.userToken())
        return Response(status: .noContent)
    }
}
