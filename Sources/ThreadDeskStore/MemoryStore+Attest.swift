import Foundation
import Synchronization

extension MemoryStore {
    public func addChallenge(_ hash: String, expires: Date, now: Date) async throws {
        attestations.withLock { state in
            state.challenges = state.challenges.filter { $0.value.expires >= now.addingTimeInterval(-forgottenChallengeAge) }
            state.challenges[hash] = (expires, false)
        }
    }

    public func useChallenge(_ hash: String, now: Date) async throws -> ChallengeUse {
        attestations.withLock { state in
            guard let challenge = state.challenges[hash] else { return .unknown }
            if challenge.used { return .used }
            if challenge.expires <= now { return .expired }
            state.challenges[hash]?.used = true
            return .accepted
        }
    }

    public func deviceKey(_ keyID: String) async throws -> DeviceKey? {
        attestations.withLock { $0.keys[keyID] }
    }

    public func addDeviceKey(_ key: DeviceKey, forgettingKeysUnusedSince unusedSince: Date?) async throws -> Bool {
        attestations.withLock { state in
            if let unusedSince {
                for id in state.keys.values.lazy.filter({ $0.usedAt < unusedSince }).prefix(forgottenKeysPerAttestation).map(\.keyID) {
                    state.keys[id] = nil
                }
            }
            guard state.keys[key.keyID] == nil else { return false }
            state.keys[key.keyID] = key
            return true
        }
    }

    public func advanceCounter(of keyID: String, to counter: UInt32, now: Date) async throws -> Bool {
        attestations.withLock { state in
            guard let key = state.keys[keyID], key.counter < counter else { return false }
            state.keys[keyID]?.counter = counter
            state.keys[keyID]?.usedAt = now
            return true
        }
    }
}

extension MemoryStore {
    public func noteDeviceKeyUsed(_ keyID: String, now: Date, unlessSince: Date) async throws {
        attestations.withLock { state in
            guard let key = state.keys[keyID], key.usedAt < unlessSince else { return }
            state.keys[keyID]?.usedAt = now
        }
    }
}

/// What `MemoryStore` keeps for App Attest.
struct AttestationState {
    var challenges: [String: (expires: Date, used: Bool)] = [:]
    var keys: [String: DeviceKey] = [:]
}
