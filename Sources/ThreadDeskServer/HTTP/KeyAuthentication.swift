import HTTPTypes
import Hummingbird
import ThreadDeskCore
import ThreadDeskWire

/// Requires a shared secret the caller presents (the app key, the legacy key, the gateway
/// secret), compared in constant time; answers `refusal` otherwise.
struct SecretAuthentication: RouterMiddleware {
    let secret: String
    /// Where the request carries it.
    let presented: @Sendable (Request) -> String?
    let refusal: APIError
    /// Who the request then is.
    let caller: @Sendable (Request) -> Caller

    func handle(
        _ request: Request, context: ThreadDeskRequestContext, next: (Request, ThreadDeskRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let value = presented(request), constantTimeEquals(value, secret) else { throw refusal }
        var context = context
        context.caller = caller(request)
        return try await next(request, context)
    }

    /// The gateway secret as a bearer token (401 `invalid_gateway_secret` otherwise).
    static func daemon(secret: String) -> Self {
        Self(
            secret: secret, presented: { $0.bearerToken },
            refusal: APIError(.unauthorized, .invalidGatewaySecret, "The gateway secret is missing or wrong.")
        ) { _ in .daemon }
    }

    /// The dSYM upload secret (`DSYMS_SECRET`) as a bearer token (401 `invalid_dsyms_secret` otherwise).
    static func builds(secret: String) -> Self {
        Self(
            secret: secret, presented: { $0.bearerToken },
            refusal: APIError(.unauthorized, .invalidDsymsSecret, "The dSYM upload secret (DSYMS_SECRET) is missing or wrong.")
        ) { _ in .daemon }
    }
}

/// Requires the key of one of the deployment's apps (`X-App-Key`, 401 `invalid_app_key`
/// otherwise), or with `legacy` one of their legacy keys (`x-api-key`, 401 `invalid_api_key`):
/// the key names the app the request acts for, and nothing of another app is reached with it.
struct AppKeyAuthentication: RouterMiddleware {
    let catalog: AppCatalog
    var legacy = false

    func handle(
        _ request: Request, context: ThreadDeskRequestContext, next: (Request, ThreadDeskRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        if legacy {
            guard let key = request.headers[.apiKey], let app = catalog.app(forLegacyKey: key) else { throw APIError.badAPIKey }
            context.caller = .legacy(app)
        } else {
            guard let key = request.headers[.appKey], let app = catalog.app(forKey: key) else { throw APIError.badAppKey }
            context.caller = .app(app, presentedToken: request.bearerToken)
        }
        return try await next(request, context)
    }
}
