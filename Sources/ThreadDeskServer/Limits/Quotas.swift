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
    /// `device:<key id>`); with it optional, unattested callers get the tighter per-address ones.
    var attestMode = AppAttestSettings.Mode.off

    enum Cost {
        case session
        case send(UserID)
        case diagnostics(UserID)
        case read(UserID)
        case update(UserID)
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
    }

    /// Takes one token from each bucket `cost` touches, or throws `limitReached` naming the first
    /// that is empty.
    func charge(_ cost: Cost, address: String) async throws {
        let tokens: Double = if case .upload(_, let bytes) = cost { Double(bytes) / 1_048_576 } else { 1 }
        for (name, key, limit) in buckets(cost, address: address) {
            guard let wait = try await store.takeToken(key, limit: limit, cost: tokens) else { continue }
            metrics.quotaRefused(name)
            throw SupportFailure.limitReached(name: name, limit: limit, retryAfter: wait)
        }
    }

    private func buckets(_ cost: Cost, address: String) -> [(String, String, QuotaLimit)] {
        switch cost {
        case .session where isDevice(address):
            [("sessions per device", "session:a:\(address)", settings.sessionsPerAddress),
             ("sessions per app", "session:app", settings.sessionsPerApp)]
        case .session where attestMode == .optional:
            [("unattested sessions per address", "session:a:\(address)", settings.unattestedSessionsPerAddress),
             ("sessions per app", "session:app", settings.sessionsPerApp)]
        case .session:
            [("sessions per address", "session:a:\(address)", settings.sessionsPerAddress),
             ("sessions per app", "session:app", settings.sessionsPerApp)]
        case .challenge:
            [("attestation challenges per address", "challenge:a:\(address)", settings.challengesPerAddress)]
        case .send(let user):
            [("sends per user", "send:u:\(user)", settings.sendsPerUser), ("sends per address", "send:a:\(address)", settings.sendsPerAddress)]
        case .diagnostics(let user):
            [("diagnostics per user", "diag:u:\(user)", settings.diagnosticsPerUser),
             ("diagnostics per address", "diag:a:\(address)", settings.diagnosticsPerAddress)]
        case .read(let user):
            [("reads per user", "read:u:\(user)", settings.readsPerUser)]
        case .update(let user):
            [("updates per user", "update:u:\(user)", settings.updatesPerUser)]
        case .installation(let user):
            [("updates per user", "update:u:\(user)", settings.updatesPerUser),
             ("installations per address", "install:a:\(address)", settings.installationsPerAddress)]
        case .refresh:
            [("attachment refreshes per address", "refresh:a:\(address)", settings.refreshesPerAddress)]
        case .upload(let user, _):
            [("upload MiB per user", "upload:u:\(user)", settings.uploadMiBPerUser),
             ("upload MiB per address", "upload:a:\(address)", settings.uploadMiBPerAddress)]
        case .thread where !isDevice(address) && attestMode == .optional:
            [("new threads per unattested address", "thread:a:\(address)", settings.unattestedThreadsPerAddress),
             ("new threads", "thread:all", settings.threadsTotal)]
        case .thread:
            [("new threads per address", "thread:a:\(address)", settings.threadsPerAddress),
             ("new threads", "thread:all", settings.threadsTotal)]
        }
    }

    /// The client as the per-address limits count it: an attested device (App Attest on), else
    /// its address (see `ClientAddressRule`).
    func clientAddress(_ request: Request, _ context: ThreadDeskRequestContext) -> String {
        if attestMode != .off, let device = context.attestedDevice { return Self.deviceKey(device) }
        return networkAddress(request, context)
    }

    /// The client's network address, whatever device it is.
    func networkAddress(_ request: Request, _ context: ThreadDeskRequestContext) -> String {
        addresses.client(peer: context.remoteAddress?.ipAddress, forwardedFor: request.headers[.xForwardedFor])
    }

    /// The limits key of an attested device.
    static func deviceKey(_ device: String) -> String { "device:\(device)" }

    private func isDevice(_ address: String) -> Bool { address.hasPrefix("device:") }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
