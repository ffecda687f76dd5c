@_exported import ThreadDeskWire
import Foundation

/// How a ``ThreadDeskClient`` reaches its server and keeps its state.
public struct ThreadDeskConfiguration: Sendable {
    /// The ThreadDesk server, e.g. `https://support.example.com`.
    public var serverURL: URL
    /// The app key (`X-App-Key`); it ships inside the app, so it is no secret.
    public var appKey: String
    /// The app's own id for its user (an account id); nil lets ThreadDesk make one up, kept in
    /// the session store.
    public var userID: String?
    /// Proof of `userID` from the app's backend (HMAC-SHA256 of the id with the server's
    /// `IDENTITY_SECRET`, in hex). Needed when the server has an identity secret, and lets a
    /// user who lost their token (a new device, a reinstall) back into their conversation.
    public var userHash: (@Sendable (_ userID: String) async throws -> String)?
    public var sessionStore: any SessionStore
    public var outbox: any OutboxStore
    /// Where attributes and activity wait until the server has them (``ThreadDeskClient/setAttributes(_:)``).
    public var userContext: any UserContextStore
    /// Told of an attribute change or an event the server refused for good (dropped, never sent
    /// again), which the device's own checks let through: a newer server's stricter rule, say.
    public var userContextRefused: (@Sendable (UserContextRefusal) -> Void)?
    /// The deadline of one request, in seconds (like every interval here).
    public var requestTimeout: TimeInterval = 30
    /// Attempts of one send before it is left in the outbox (a ``ThreadDeskError`` of kind ``ThreadDeskError/Kind-swift.struct/pending``).
    public var sendAttempts = 4
    /// Waits between attempts of a request (a server's `Retry-After` takes precedence).
    public var retryBackoff = Backoff(base: 0.5, cap: 10)
    /// Waits between reconnections of the event stream.
    public var streamBackoff = Backoff(base: 1, cap: 30)
    /// Failed stream connections in a row after which new messages are polled for instead.
    public var streamFailuresBeforePolling = 3
    /// How often to poll while the stream is unavailable.
    public var pollInterval: TimeInterval = 15
    /// How long to poll before trying the stream again.
    public var streamRetryInterval: TimeInterval = 60
    /// The longest silence on an open stream before it is taken for dead (the server sends a
    /// keep-alive every 20 s).
    public var streamIdleTimeout: TimeInterval = 60
    /// At most one typing report this often (the server coalesces more anyway).
    public var typingInterval: TimeInterval = 3
    /// App Attest (`DeviceCheckAttestProvider` on a device that supports it): sessions are
    /// opened by an attested key, and the requests that cost the server most are signed. Nil:
    /// none (a server with `APP_ATTEST=required` then refuses the session).
    public var appAttest: (any AppAttestProvider)?

    public init(
        serverURL: URL, appKey: String, userID: String? = nil, sessionStore: any SessionStore, outbox: any OutboxStore,
        userHash: (@Sendable (_ userID: String) async throws -> String)? = nil, userContext: (any UserContextStore)? = nil
    ) {
        self.serverURL = serverURL
        self.appKey = appKey
        self.userID = userID
        self.sessionStore = sessionStore
        self.outbox = outbox
        self.userHash = userHash
        self.userContext = userContext ?? InMemoryUserContextStore()
    }

    /// The session in the Keychain on Apple platforms (a file on Linux), the outbox and the user's
    /// unsent attributes and activity in a folder of Application Support (of `~/.local/state` on Linux).
    public static func standard(serverURL: URL, appKey: String, userID: String? = nil) -> ThreadDeskConfiguration {
        let folder = defaultFolder()
        #if canImport(Security)
        let sessions: any SessionStore = KeychainSessionStore(service: "ThreadDeskKit.\(serverURL.host ?? "server")")
        #else
        let sessions: any SessionStore = FileSessionStore(url: folder.appendingPathComponent("session.json"))
        #endif
        return ThreadDeskConfiguration(
            serverURL: serverURL, appKey: appKey, userID: userID, sessionStore: sessions,
            outbox: FileOutbox(directory: folder.appendingPathComponent("outbox")),
            userContext: FileUserContextStore(url: folder.appendingPathComponent("user-context.json")))
    }

    static func defaultFolder() -> URL {
        #if canImport(Darwin)
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        #else
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_STATE_HOME"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".local/state")
        #endif
        return base.appendingPathComponent("ThreadDeskKit")
    }
}
