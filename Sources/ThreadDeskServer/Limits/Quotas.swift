import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// Charges requests to their token buckets (see `QuotaSettings`); a request over any limit is
/// refused (429 with `Retry-After`) before it reaches Discord or the store's user records.
struct Quotas: Sendable {
    let store: any QuotaBuckets
    let settings: QuotaSettings
    let addresses: ClientAddressRule
    let metrics: ServerMetrics
    /// With App Attest on, an attested caller's limits count per device (its `address` is
    /// `device:<key id>@<network address>`, see `deviceKey`), and a few per network address as
    /// well (new attestations and keys, new threads, and a looser network budget beside each of the
    /// device's: one device must not make many); with it optional,
    /// unattested callers get the tighter per-address ones.
    let attestMode: AppAttestSettings.Mode
    /// The apps that reserved new threads per hour (`AppLimits`): theirs alone, the rest of
    /// `threadsTotal` for the others.
    var threadShares: [AppID: Int] = [:]

    enum Cost {
        case session
        case send(UserID)
        case diagnostics(UserID)
        case read(UserID)
        case update(UserID)
        /// What the app says about the user (attributes, activity): a store write each.
        case context(UserID)
        /// New device info (a note in the thread when it changed).
        case installation(UserID)
        /// Signing an expired attachment URL anew.
        case refresh
        /// Uploaded bytes: a token per MiB.
        case upload(UserID, bytes: Int)
        /// A new forum thread.
        case thread
        /// An App Attest challenge (each attestation or assertion takes one).
        case challenge
        /// An attempt to attest a new key, charged before it is checked: failed ones count too.
        case attestation
        /// A key that verified, before it is kept.
        case newKey
        /// An attempt to open a session with App Attest on, charged to the network before any
        /// assertion is checked or the store read: a failed one costs its sender too.
        case sessionAttempt
    }

    /// Takes one token from each bucket `cost` touches (an upload: one per MiB).
    /// - Parameters:
    ///   - cost: What the request costs.
    ///   - address: The client as the limits count it (`clientAddress`).
    /// - Throws: `SupportFailure.limitReached` naming the first bucket that is empty; the store's errors.
    func charge(_ cost: Cost, address: String) async throws {
        let tokens: Double = if case .upload(_, let bytes) = cost { Double(bytes) / 1_048_576 } else { 1 }
        let (device, network) = Self.split(address)
        for (name, key, limit) in buckets(cost, address: device ?? network, network: network) {
            guard let wait = try await store.takeToken(key, limit: limit, cost: tokens) else { continue }
            metrics.quotaRefused(name)
            throw SupportFailure.limitReached(name: name, limit: limit, retryAfter: wait)
        }
    }

    /// Gives back what `charge` took for `cost`: the request was turned away for a reason of the
    /// server's own (every large-upload slot taken), and the client will retry.
    /// - Parameters:
    ///   - cost: What `charge` took.
    ///   - address: The client it was charged to.
    /// - Throws: The store's errors.
    func refund(_ cost: Cost, address: String) async throws {
        let tokens: Double = if case .upload(_, let bytes) = cost { Double(bytes) / 1_048_576 } else { 1 }
        let (device, network) = Self.split(address)
        for (_, key, limit) in buckets(cost, address: device ?? network, network: network) {
            try await store.returnToken(key, limit: limit, cost: tokens)
        }
    }

    /// `address`: the device's key for attested callers (`device:<key id>`), else `network`.
    private func buckets(_ cost: Cost, address: String, network: String) -> [(String, String, QuotaLimit)] {
        let own = ownBuckets(cost, address: address, network: network)
        // An attested device's buckets are its own: the network's stand beside them.
        guard isDevice(address), let shared = networkBucket(cost, network: network) else { return own }
        return own + [shared]
    }

    /// The network's bucket charged beside an attested device's own for `cost`, if any.
    private func networkBucket(_ cost: Cost, network: String) -> (String, String, QuotaLimit)? {
        switch cost {
        case .send: ("sends per network", "send:n:\(network)", settings.sendsPerNetwork)
        case .diagnostics: ("diagnostics per network", "diag:n:\(network)", settings.diagnosticsPerNetwork)
        case .installation: ("installations per network", "install:n:\(network)", settings.installationsPerNetwork)
        case .refresh: ("attachment refreshes per network", "refresh:n:\(network)", settings.refreshesPerNetwork)
        case .context: ("user context writes per network", "context:n:\(network)", settings.contextPerNetwork)
        case .upload: ("upload MiB per network", "upload:n:\(network)", settings.uploadMiBPerNetwork)
        default: nil
        }
    }

    private func ownBuckets(_ cost: Cost, address: String, network: String) -> [(String, String, QuotaLimit)] {
        switch cost {
        case .sessionAttempt:
            [("sessions per network", "session:n:\(network)", settings.sessionsPerNetwork)]
        case .session where isDevice(address):
            [("sessions per device", "session:a:\(address)", settings.sessionsPerAddress),
             ("sessions per app", Self.appBucket("session:app", network: network), settings.sessionsPerApp)]
        case .session where attestMode == .optional:
            [("unattested sessions per address", "session:a:\(address)", settings.unattestedSessionsPerAddress),
             ("sessions per app", Self.appBucket("session:app", network: network), settings.sessionsPerApp)]
        case .session:
            [("sessions per address", "session:a:\(address)", settings.sessionsPerAddress),
             ("sessions per app", Self.appBucket("session:app", network: network), settings.sessionsPerApp)]
        case .challenge:
            // App-key routes: always the network address. The app's bucket bounds the challenges
            // the store holds, however many addresses ask.
            [("attestation challenges per address", "challenge:a:\(network)", settings.challengesPerAddress),
             ("attestation challenges per app", Self.appBucket("challenge:app", network: network), settings.challengesPerApp)]
        case .attestation:
            [("attestations per address", "attest:a:\(network)", settings.attestationsPerAddress)]
        case .newKey:
            [("new keys per network", "key:n:\(network)", settings.newKeysPerNetwork)]
        case .send(let user):
            [("sends per user", UserQuota.send.key(user), settings.sendsPerUser), ("sends per address", "send:a:\(address)", settings.sendsPerAddress)]
        case .diagnostics(let user):
            [("diagnostics per user", UserQuota.diagnostics.key(user), settings.diagnosticsPerUser),
             ("diagnostics per address", "diag:a:\(address)", settings.diagnosticsPerAddress)]
        case .read(let user):
            [("reads per user", UserQuota.read.key(user), settings.readsPerUser)]
        case .update(let user):
            [("updates per user", UserQuota.update.key(user), settings.updatesPerUser)]
        case .context(let user):
            [("updates per user", UserQuota.update.key(user), settings.updatesPerUser),
             ("user context writes per address", "context:a:\(address)", settings.contextPerAddress)]
        case .installation(let user):
            [("updates per user", UserQuota.update.key(user), settings.updatesPerUser),
             ("installations per address", "install:a:\(address)", settings.installationsPerAddress)]
        case .refresh:
            [("attachment refreshes per address", "refresh:a:\(address)", settings.refreshesPerAddress)]
        case .upload(let user, _):
            [("upload MiB per user", UserQuota.upload.key(user), settings.uploadMiBPerUser),
             ("upload MiB per address", "upload:a:\(address)", settings.uploadMiBPerAddress)]
        case .thread where !isDevice(address) && attestMode == .optional:
            [("new threads per unattested address", "thread:a:\(address)", settings.unattestedThreadsPerAddress),
             threadBudget(network: network)]
        case .thread where isDevice(address):
            // Per device, and per network address too: many keys from one place are still one place.
            [("new threads per device", "thread:a:\(address)", settings.threadsPerAddress),
             ("new threads per address", "thread:n:\(network)", settings.threadsPerAddress),
             threadBudget(network: network)]
        case .thread:
            [("new threads per address", "thread:a:\(address)", settings.threadsPerAddress),
             threadBudget(network: network)]
        }
    }

    /// The new threads bucket of the app whose network address `network` is: its reserved share,
    /// or the pool of what no app reserved (`threadsTotal` whole when none did, as with one app).
    private func threadBudget(network: String) -> (String, String, QuotaLimit) {
        let app = network.firstIndex(of: "|").flatMap { AppID(String(network[..<$0])) } ?? .default
        if let share = threadShares[app] { return ("new threads of the app", "thread:app:\(app)", QuotaLimit(share, per: .seconds(3600))) }
        let total = settings.threadsTotal
        let reserved = threadShares.values.reduce(0, +)
        guard reserved > 0, total.count > 0 else { return ("new threads", "thread:all", total) }
        // The configuration leaves at least one (`AppCatalog.shareProblems`); 0 would switch it off.
        let left = Double(total.count) - Double(reserved) * (total.period / .seconds(3600))
        return ("new threads", "thread:all", QuotaLimit(max(1, Int(left)), per: total.period))
    }

    /// The client as the per-address limits count it: an attested device (App Attest on, the
    /// device of a verified user token, never of a token beside the app key) with its network
    /// address, else its network address (see `ClientAddressRule`).
    func clientAddress(_ request: Request, _ context: ThreadDeskRequestContext) -> String {
        let network = networkAddress(request, context)
        if attestMode != .off, let device = context.attestedDevice { return Self.deviceKey(device, network: network) }
        return network
    }

    /// The client's network address, whatever device it is; for a caller of an app other than
    /// the default, within that app (`<app>|<address>`): what one app's clients spend of the
    /// per-address limits never counts against another's.
    func networkAddress(_ request: Request, _ context: ThreadDeskRequestContext) -> String {
        let address = addresses.client(peer: context.remoteAddress?.ipAddress, forwardedFor: request.headers[.xForwardedFor])
        guard let app = context.appID, app != .default else { return address }
        return "\(app)|\(address)"
    }

    /// Whom a large body of `user` is read for (`ConcurrencyGate`): the user, and while the
    /// per-address upload limit is on, the client's network across apps (a key pulled from one
    /// app's binary must not buy a slot per app).
    func largeBodyHolder(_ user: UserID, _ request: Request, _ context: ThreadDeskRequestContext) -> SlotHolder {
        guard settings.uploadMiBPerAddress.count > 0 else { return SlotHolder(user: user.rawValue) }
        let network = addresses.client(peer: context.remoteAddress?.ipAddress, forwardedFor: request.headers[.xForwardedFor])
        return SlotHolder(user: user.rawValue, network: network)
    }

    /// The bucket `name` of the app whose network address `network` is (`networkAddress`: an app
    /// other than the default's is its prefix): each app's own, the default's the key from before
    /// there were several.
    static func appBucket(_ name: String, network: String) -> String {
        guard let bar = network.firstIndex(of: "|") else { return name }
        return "\(name):\(network[..<bar])"
    }

    /// The limits key of an attested device seen from `network`.
    static func deviceKey(_ device: String, network: String) -> String { "device:\(device)@\(network)" }

    /// The device part (`device:<key id>`) and the network address of a limits key.
    static func split(_ address: String) -> (device: String?, network: String) {
        guard address.hasPrefix("device:"), let at = address.firstIndex(of: "@") else { return (nil, address) }
        return (String(address[..<at]), String(address[address.index(after: at)...]))
    }

    private func isDevice(_ address: String) -> Bool { address.hasPrefix("device:") }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
