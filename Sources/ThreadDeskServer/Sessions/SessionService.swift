import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// Who a user is: sessions opened with the app key (a new id, or an id proven by one of its
/// tokens or the app backend's `userHash`), sessions closed, and bearer tokens checked.
struct SessionService: Sendable {
    let users: UserSerializer
    let store: any UserRecords & GlobalValues
    let devices: DeviceService
    /// Ends the streams of tokens that end.
    let live: LiveHub
    /// The apps: each its own `userHash` secret and legacy routes; a token of an app no longer
    /// configured opens nothing.
    let catalog: AppCatalog
    /// How long an unused token lives.
    var settings = SessionSettings()
    /// Notes a token's use beside the request, for those that must not wait for it (stream openings).
    let useNotes: TokenUseNotes
    let now: @Sendable () -> Date

    /// Opens a session: a generated id for a new user, or the given id when it is unclaimed or
    /// proven (its current token, or the app backend's `userHash`). Every session gets a new token.
    /// - Parameters:
    ///   - app: The app whose key opened it: the user is its.
    ///   - requested: The id the client asks for (as the app knows it); nil for a new one.
    ///   - userHash: The app backend's signature of `requested` (required with `IDENTITY_SECRET`).
    ///   - presentedToken: A token the client holds: proof that `requested` is its own.
    ///   - installation: The device's info, noted in the thread when it changed.
    ///   - device: The attested device the session is for, named in its token.
    /// - Throws: `SupportFailure.invalidUserHash`, `SupportFailure.userClaimed` for an id in use
    ///   without proof, `DiscordError` from the device note, and the store's errors.
    func open(
        app: AppSettings, userID requested: UserID?, userHash: String?, presentedToken: String?, installation: InstallationInfo?,
        device: String? = nil
    ) async throws -> Session {
        // The app's backend secret for `userHash` (`IDENTITY_SECRET`), nil when ids are not vouched for.
        let verifier = app.identitySecret.map(IdentityVerifier.init(secret:))
        let legacyRoutes = app.legacyAPIKey != nil
        if let requested, let verifier {
            guard let userHash, verifier.verify(userHash, for: requested) else { throw SupportFailure.invalidUserHash }
        }
        let id = UserID(app: app.id, local: requested ?? UserID.generate())
        // An attested device's token names the device (see `UserToken.generate(for:device:)`).
        let token = UserToken.generate(for: id, device: device)
        let adoption = requested.flatMap { ThreadNotes.adoptionNote(for: $0, verified: verifier != nil, legacyRoutes: legacyRoutes) }
        // Only an installation can make a session call Discord (a device note in an existing thread).
        // Tokens ended here (the oldest past the limit, a replaced claim's) end their streams too,
        // even when the rest fails: the store keeps what the body changed before it threw.
        var endedTokens = false
        defer { if endedTokens { live.tokensChanged(id) } }
        try await users.withUser(id, work: installation == nil || requested == nil ? .brief : .waitsOnOthers) { context in
            if context.record == nil, let adoption {
                // The reference system may have made this user's thread: the first send looks for it.
                try await store.setGlobalValue(ThreadNotes.unrecordedThreadKey(id), to: adoption)
            }
            var record = context.record ?? UserRecord(id: id, now: now())
            let tokensBefore = record.liveTokenHashes
            if context.record != nil, verifier == nil {
                if let presentedToken, record.holdsToken(hash: UserToken.hash(presentedToken)) {
                    // Another session of the same client.
                } else if record.isUnusedClaim {
                    // Claimed, and nothing ever done with it (a first answer lost on the way): the
                    // new claim replaces the old, whose tokens end; there is nothing of anyone's to show.
                    record.revokeAllTokens()
                    record.pendingInstallation = nil
                } else {
                    // Used once (a conversation, a device, a request with one of its tokens), even
                    // if nothing of it is left: only its tokens, or its userHash, open it.
                    throw SupportFailure.userClaimed
                }
            }
            // Earlier tokens stay live (another device, or a renewal whose answer was lost) up to
            // `UserRecord.liveTokenLimit`; `DELETE /v1/session` ends one.
            record.addToken(hash: UserToken.hash(token))
            record.noteTokenUse(hash: UserToken.hash(token), at: now())
            record.updatedAt = now()
            context.record = record
            endedTokens = !tokensBefore.isSubset(of: record.liveTokenHashes)
            if let installation { try await devices.applyInstallation(installation, to: &context) }
        }
        return Session(userId: id.local.description, token: token)
    }

    /// Ends the session of `token` (sign-out on one device); the user's other tokens stay live.
    /// - Parameters:
    ///   - record: The signed-in user.
    ///   - token: The bearer token that ends.
    /// - Throws: The store's errors.
    func close(_ record: UserRecord, token: String) async throws {
        try await users.withUser(record.id, work: .brief) { context in
            context.record?.removeToken(hash: UserToken.hash(token))
            context.record?.updatedAt = now()
        }
        // Its event streams, here and on every replica, end with it.
        live.tokensChanged(record.id)
    }

    /// Ends every token of the user (sign-out everywhere): a copied one included.
    /// - Parameter record: The signed-in user.
    /// - Throws: The store's errors.
    func closeAll(_ record: UserRecord) async throws {
        try await users.withUser(record.id, work: .brief) { context in
            context.record?.revokeAllTokens()
            context.record?.updatedAt = now()
        }
        // Their event streams, here and on every replica, end with them.
        live.tokensChanged(record.id)
    }

    /// The whole record of the user a bearer token belongs to (one lookup for a read).
    /// - Parameters:
    ///   - token: The bearer token as the client sent it.
    ///   - notingUseApart: The token's use (and the user's first) is noted beside the request
    ///     (`TokenUseNotes`), not in its path under the user's lock: for a stream's opening, which
    ///     shows nothing a claim replacing an unused token could take (its record then has no
    ///     conversation), and which ends with its token when such a claim comes first.
    /// - Throws: `SupportFailure.notAuthenticated` for a token unknown, ended, or idle too long
    ///   (then it ends); the store's errors.
    func authenticate(token: String, notingUseApart: Bool = false) async throws -> UserRecord {
        guard !token.isEmpty, token.utf8.count <= 256 else { throw SupportFailure.notAuthenticated }
        let hash = UserToken.hash(token)
        let found: UserRecord?
        if let user = UserToken.user(in: token) {
            found = try await store.user(user).flatMap { $0.holdsToken(hash: hash) ? $0 : nil }
        } else {
            found = try await store.user(forTokenHash: hash)
        }
        guard var record = found, catalog.app(of: record.id) != nil else { throw SupportFailure.notAuthenticated }
        let now = now()
        let lastUse = record.tokenUsedAt[hash]
        if let idle = settings.idleAfter, let lastUse, now.timeIntervalSince(lastUse) >= idle / .seconds(1) {
            try await end(hash, of: record.id, idle: idle)
            throw SupportFailure.notAuthenticated
        }
        // At most once a `useNotedEvery` per token: a write a day, not one per request.
        let noteUse = settings.useNotedEvery.map { every in
            lastUse.map { now.timeIntervalSince($0) >= every / .seconds(1) || now < $0 } ?? true
        } ?? false
        if notingUseApart, !record.history.contains(.used) || noteUse {
            useNotes.note(.init(user: record.id, hash: hash), usedAt: noteUse ? now : nil)
        } else if !record.history.contains(.used) || noteUse {
            // The first request made with one of its tokens: from now on the id is in use, and
            // no claim with the app key alone replaces it (written once per user). Under the
            // user's lock, and only while the token still holds: a claim that replaced this one
            // meanwhile (it was unused until now) wins, and this request gets nothing. The token's
            // use goes in the same write.
            record = try await users.withUser(record.id, work: .brief) { context in
                guard var current = context.record, current.holdsToken(hash: hash) else { throw SupportFailure.notAuthenticated }
                current.history.insert(.used)
                if noteUse { current.noteTokenUse(hash: hash, at: now) }
                context.record = current
                return current
            }
        }
        return record
    }

    /// Ends the token `hash`, unused for `idle`, and its streams.
    private func end(_ hash: String, of id: UserID, idle: Duration) async throws {
        let cutoff = now().addingTimeInterval(-(idle / .seconds(1)))
        try await users.withUser(id, work: .brief) { context in
            guard var current = context.record, let last = current.tokenUsedAt[hash], last <= cutoff else { return }
            current.removeToken(hash: hash)
            context.record = current
        }
        live.tokensChanged(id)
    }
}

extension SessionService: TokenAuthority {}
