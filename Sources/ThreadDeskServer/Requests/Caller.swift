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
