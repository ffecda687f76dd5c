import HTTPTypes
import Hummingbird
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// Who a request proved to be, as the authentication middleware of its route group found it.
/// Handlers read the caller from the context; none reads a credential header.
enum Caller: Sendable {
    /// A user, by one of their live tokens (`Authorization: Bearer`).
    case user(UserRecord, token: String)
    /// An app, by its key (`X-App-Key`); a bearer token, if one came, is the client's earlier
    /// session (a renewal or another device).
    case app(AppSettings, presentedToken: String?)
    /// The reference system's client of an app, by the app's legacy key (`x-api-key`).
    case legacy(AppSettings)
    /// The gateway daemon, by the gateway secret.
    case daemon
    /// A metrics scraper, by `METRICS_TOKEN`.
    case scraper
}

extension ThreadDeskRequestContext {
    /// The authenticated user, for routes behind `UserAuthentication`.
    func user() throws(APIError) -> UserRecord {
        guard case .user(let record, _) = caller else { throw APIError.unauthorized }
        return record
    }

    /// The token the user authenticated with.
    func userToken() throws(APIError) -> String {
        guard case .user(_, let token) = caller else { throw APIError.unauthorized }
        return token
    }

    /// The attested device the caller's token was issued to (App Attest), if any. Only a user's
    /// token counts: the authentication middleware found it live, and the store keeps the hash of
    /// the whole token, device part included, so the device part is the server's own. A token
    /// beside the app key is not checked there: see `claimedDevice`.
    var attestedDevice: String? {
        guard case .user(_, let token) = caller else { return nil }
        return UserToken.device(in: token)
    }

    /// The device an earlier session's token beside the app key names: unverified (anyone can
    /// write a token), so good only as the device an assertion must then prove, never for limits.
    var claimedDevice: String? {
        presentedToken.flatMap(UserToken.device(in:))
    }

    /// Whether this request may start a forum thread: always with App Attest off; an attested
    /// device's only with an assertion over the request (a thread made anew after Discord deleted
    /// or locked the old one included); an unattested caller's only where attestation is optional.
    func mayStartThread(attestMode: AppAttestSettings.Mode) -> Bool {
        guard attestMode != .off else { return true }
        guard attestedDevice != nil else { return attestMode == .optional }
        return assertedDevice != nil
    }

    /// The earlier session's token a client presented beside the app key, if any.
    var presentedToken: String? {
        guard case .app(_, let token) = caller else { return nil }
        return token
    }

    /// The app the caller is of: the one its key names, or its user's. Nil for the daemon (and
    /// for a user of an app no longer configured, whose token then opens nothing).
    func app(in catalog: AppCatalog) -> AppSettings? {
        switch caller {
        case .app(let app, _), .legacy(let app): app
        case .user(let record, _): catalog.app(of: record.id)
        case .daemon, .scraper, nil: nil
        }
    }

    /// The id of the app the caller is of (see `app(in:)`), without the catalog.
    var appID: AppID? {
        switch caller {
        case .app(let app, _), .legacy(let app): app.id
        case .user(let record, _): record.id.app
        case .daemon, .scraper, nil: nil
        }
    }

    /// The app of a route only an app's key (or legacy key) reaches (401 otherwise).
    func keyedApp() throws(APIError) -> AppSettings {
        switch caller {
        case .app(let app, _), .legacy(let app): return app
        default: throw APIError.badAppKey
        }
    }
}

/// Requires a live bearer token of a user (401 otherwise); with `attestedOnly` (`APP_ATTEST=required`),
/// one issued to an attested device (401 `attestation_required` otherwise: tokens from before
/// attestation was required, which the SDK answers by attesting), whose key is still kept and
/// trusted (`AttestService.requireTrusted`). With `scopesReads`, for short
/// reads, the token check and the handler share one `ReadScope`: one barrier on a replica's memory.
struct UserAuthentication: RouterMiddleware {
    let sessions: SessionService
    var attestedOnly = false
    var scopesReads = false
    /// App Attest, when on: an attested device's session served is a use of its key.
    var attest: AttestService?
    /// The token's use is noted beside the request, not in its path (stream openings: see
    /// `SessionService.authenticate(token:notingUseApart:)`).
    var notesUseApart = false

    func handle(
        _ request: Request, context: ThreadDeskRequestContext, next: (Request, ThreadDeskRequestContext) async throws -> Response
    ) async throws -> Response {
        guard scopesReads else { return try await authenticated(request, context: context, next: next) }
        return try await ReadScope.run { try await authenticated(request, context: context, next: next) }
    }

    private func authenticated(
        _ request: Request, context: ThreadDeskRequestContext, next: (Request, ThreadDeskRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let token = request.bearerToken else { throw APIError.unauthorized }
        var context = context
        context.caller = .user(try await sessions.authenticate(token: token, notingUseApart: notesUseApart), token: token)
        if attestedOnly {
            guard let device = context.attestedDevice else {
                attest?.count(.attestationRequired, step: "token")
                throw DeviceCheckFailure.attestationRequired
            }
            // The token is only as good as its key: forgotten or no longer trusted, it stops.
            do {
                try await attest?.requireTrusted(device)
            } catch let failure as DeviceCheckFailure {
                attest?.count(failure, step: "token")
                throw failure
            }
        }
        if let attest, let device = context.attestedDevice { await attest.noteUse(of: device) }
        return try await next(request, context)
    }
}

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

/// Charges the route's limits before its handler runs (429 with `Retry-After` when one is spent):
/// `cost` names them for the caller, nil for none.
struct LimitMiddleware: RouterMiddleware {
    let quotas: Quotas
    let cost: @Sendable (ThreadDeskRequestContext) throws -> Quotas.Cost?

    func handle(
        _ request: Request, context: ThreadDeskRequestContext, next: (Request, ThreadDeskRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let cost = try cost(context) else { return try await next(request, context) }
        let address = quotas.clientAddress(request, context)
        try await quotas.charge(cost, address: address)
        do {
            return try await next(request, context)
        } catch let error as APIError where error.code == .busy || error.code == .uploadInProgress {
            // Turned away because the server is busy (every large-upload slot taken, or the one
            // its user or network may hold): the retry
            // the answer asks for must not find the quota spent by this attempt. A refund that
            // fails leaves it spent, as it was before refunds.
            try? await quotas.refund(cost, address: address)
            throw error
        }
    }
}
