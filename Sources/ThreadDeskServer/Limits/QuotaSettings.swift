import ThreadDeskStore

/// How much one client may ask of ThreadDesk, and so of Discord. The app key ships inside every
/// copy of the app, so anyone can call the API: every route that costs Discord calls or storage
/// takes a token from the buckets of the user, the client address and the app, and a new forum
/// thread also takes one from its address's and the whole server's thread budget.
public struct QuotaSettings: Sendable, Hashable {
    public var sessionsPerAddress = QuotaLimit(30, per: .seconds(3600))
    public var sessionsPerApp = QuotaLimit(1000, per: .seconds(60))
    public var sendsPerUser = QuotaLimit(20, per: .seconds(60))
    public var sendsPerAddress = QuotaLimit(60, per: .seconds(60))
    public var diagnosticsPerUser = QuotaLimit(10, per: .seconds(3600))
    public var diagnosticsPerAddress = QuotaLimit(30, per: .seconds(3600))
    public var readsPerUser = QuotaLimit(120, per: .seconds(60))
    public var updatesPerUser = QuotaLimit(30, per: .seconds(60))
    /// Device info that changed costs a note in Discord: limited per address as well as per user.
    public var installationsPerAddress = QuotaLimit(120, per: .seconds(3600))
    /// What the app says about its users (`PUT /v1/attributes`, `POST /v1/activity`): a store
    /// write each, limited per device or address as well as per user.
    public var contextPerAddress = QuotaLimit(600, per: .seconds(3600))
    /// A download whose Discord CDN URL expired costs a call to sign it anew.
    public var refreshesPerAddress = QuotaLimit(120, per: .seconds(3600))
    /// Uploaded files, in MiB (a token per MiB).
    public var uploadMiBPerUser = QuotaLimit(200, per: .seconds(3600))
    public var uploadMiBPerAddress = QuotaLimit(500, per: .seconds(3600))
    /// New forum threads: Discord caps a forum's active threads, and a flood of sessions must
    /// not fill it and lock out real users.
    public var threadsPerAddress = QuotaLimit(5, per: .seconds(3600))
    public var threadsTotal = QuotaLimit(200, per: .seconds(3600))
    /// With `APP_ATTEST=optional`, callers that did not attest: tighter than the per-address limits
    /// (attested devices are counted one by one instead).
    public var unattestedSessionsPerAddress = QuotaLimit(10, per: .seconds(3600))
    public var unattestedThreadsPerAddress = QuotaLimit(2, per: .seconds(3600))
    /// App Attest challenges: each attestation or assertion spends one.
    public var challengesPerAddress = QuotaLimit(300, per: .seconds(3600))
    /// App Attest challenges from all addresses together: bounds the challenges the store holds.
    public var challengesPerApp = QuotaLimit(2000, per: .seconds(60))
    /// Attempts to attest a new key (failed ones included), per network address: one device
    /// cannot mint devices (and their fresh per-device buckets) without end.
    public var attestationsPerAddress = QuotaLimit(10, per: .seconds(3600))
    /// Keys kept (attestations that verified), per network address and day: what a phone that
    /// attests key after key (each with fresh per-device buckets) may add at most.
    public var newKeysPerNetwork = QuotaLimit(20, per: .seconds(86_400))
    /// With App Attest on, a network's budget beside each attested device's own (looser: several
    /// devices share a home or an office), so one phone that attests many keys gains nothing.
    /// Session attempts are charged to it before the assertion is checked: a failed one costs too.
    public var sessionsPerNetwork = QuotaLimit(120, per: .seconds(3600))
    public var sendsPerNetwork = QuotaLimit(240, per: .seconds(60))
    public var diagnosticsPerNetwork = QuotaLimit(120, per: .seconds(3600))
    public var installationsPerNetwork = QuotaLimit(480, per: .seconds(3600))
    public var refreshesPerNetwork = QuotaLimit(480, per: .seconds(3600))
    public var contextPerNetwork = QuotaLimit(2400, per: .seconds(3600))
    public var uploadMiBPerNetwork = QuotaLimit(2000, per: .seconds(3600))

    public init() {}

    /// Every limit switched off: one address acting as many users (the sandbox, most tests).
    public static var off: QuotaSettings {
        var settings = QuotaSettings()
        for (_, keyPath) in variables { settings[keyPath: keyPath] = QuotaLimit(0, per: .seconds(1)) }
        return settings
    }

    /// The variable of each limit, for the environment and `.env.example`.
    static var variables: [(name: String, keyPath: WritableKeyPath<QuotaSettings, QuotaLimit>)] {
        [
            ("QUOTA_SESSIONS_PER_ADDRESS", \.sessionsPerAddress), ("QUOTA_SESSIONS_PER_APP", \.sessionsPerApp),
            ("QUOTA_SENDS_PER_USER", \.sendsPerUser), ("QUOTA_SENDS_PER_ADDRESS", \.sendsPerAddress),
            ("QUOTA_DIAGNOSTICS_PER_USER", \.diagnosticsPerUser), ("QUOTA_DIAGNOSTICS_PER_ADDRESS", \.diagnosticsPerAddress),
            ("QUOTA_READS_PER_USER", \.readsPerUser), ("QUOTA_UPDATES_PER_USER", \.updatesPerUser),
            ("QUOTA_INSTALLATIONS_PER_ADDRESS", \.installationsPerAddress), ("QUOTA_REFRESHES_PER_ADDRESS", \.refreshesPerAddress),
            ("QUOTA_UPLOAD_MIB_PER_USER", \.uploadMiBPerUser), ("QUOTA_UPLOAD_MIB_PER_ADDRESS", \.uploadMiBPerAddress),
            ("QUOTA_THREADS_PER_ADDRESS", \.threadsPerAddress), ("QUOTA_THREADS_TOTAL", \.threadsTotal),
            ("QUOTA_UNATTESTED_SESSIONS_PER_ADDRESS", \.unattestedSessionsPerAddress),
            ("QUOTA_UNATTESTED_THREADS_PER_ADDRESS", \.unattestedThreadsPerAddress),
            ("QUOTA_CHALLENGES_PER_ADDRESS", \.challengesPerAddress), ("QUOTA_CHALLENGES_PER_APP", \.challengesPerApp),
            ("QUOTA_ATTESTATIONS_PER_ADDRESS", \.attestationsPerAddress), ("QUOTA_NEW_KEYS_PER_NETWORK", \.newKeysPerNetwork),
            ("QUOTA_SESSIONS_PER_NETWORK", \.sessionsPerNetwork), ("QUOTA_SENDS_PER_NETWORK", \.sendsPerNetwork),
            ("QUOTA_DIAGNOSTICS_PER_NETWORK", \.diagnosticsPerNetwork), ("QUOTA_INSTALLATIONS_PER_NETWORK", \.installationsPerNetwork),
            ("QUOTA_REFRESHES_PER_NETWORK", \.refreshesPerNetwork), ("QUOTA_UPLOAD_MIB_PER_NETWORK", \.uploadMiBPerNetwork),
            ("QUOTA_CONTEXT_PER_ADDRESS", \.contextPerAddress), ("QUOTA_CONTEXT_PER_NETWORK", \.contextPerNetwork),
        ]
    }

    /// `count/seconds`, e.g. `20/60`; `0` switches a limit off. Periods up to a day.
    static func parse(_ text: String) -> QuotaLimit? {
        if text == "0" { return QuotaLimit(0, per: .seconds(1)) }
        let parts = text.split(separator: "/")
        guard parts.count == 2, let count = Int(parts[0]), let seconds = Int(parts[1]), count > 0, (1...86_400).contains(seconds) else {
            return nil
        }
        return QuotaLimit(count, per: .seconds(seconds))
    }
}
