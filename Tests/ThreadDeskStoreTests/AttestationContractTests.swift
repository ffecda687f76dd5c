import Foundation
import Testing
import TestSupport
import ThreadDeskStore

/// App Attest's challenges and device keys: each check-and-change happens once, whoever races.
@Suite("DeviceAttestations contract")
struct DeviceAttestationsContract {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test(arguments: StoreKind.available)
    func aChallengeIsUsedOnceBeforeItExpires(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.addChallenge("a", expires: start.addingTimeInterval(300), now: start)
            try await store.addChallenge("b", expires: start.addingTimeInterval(300), now: start)
            #expect(try await store.useChallenge("a", now: start) == .accepted)
            #expect(try await store.useChallenge("a", now: start) == .used)
            #expect(try await store.useChallenge("b", now: start.addingTimeInterval(300)) == .expired)
            #expect(try await store.useChallenge("never", now: start) == .unknown)
            // Many at once: exactly one wins.
            try await store.addChallenge("c", expires: start.addingTimeInterval(300), now: start)
            let outcomes = try await withThrowingTaskGroup(of: ChallengeUse.self) { group in
                for _ in 0..<8 { group.addTask { try await store.useChallenge("c", now: self.start) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == .accepted }.count == 1)
            #expect(outcomes.filter { $0 == .used }.count == 7)
        }
    }

    @Test(arguments: StoreKind.available)
    func challengesLongExpiredAreForgotten(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            // Deleted a minute after they expire, not kept for a day: the table holds minutes' worth.
            try await store.addChallenge("old", expires: start, now: start.addingTimeInterval(-300))
            try await store.addChallenge("recent", expires: start.addingTimeInterval(30), now: start.addingTimeInterval(-270))
            let later = start.addingTimeInterval(forgottenChallengeAge + 1)
            try await store.addChallenge("new", expires: later.addingTimeInterval(300), now: later)
            #expect(try await store.useChallenge("old", now: later) == .unknown)
            #expect(try await store.useChallenge("recent", now: later) == .expired)
            #expect(forgottenChallengeAge <= 300)
        }
    }

    @Test(arguments: StoreKind.available)
    func aKeyIsAttestedOnceAndItsCounterOnlyRises(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let key = DeviceKey(keyID: "k1", publicKey: [4, 1, 2, 3], environment: "development", root: "apple", attestedAt: start)
            #expect(try await store.deviceKey("k1") == nil)
            #expect(try await store.addDeviceKey(key))
            #expect(try await store.addDeviceKey(DeviceKey(keyID: "k1", publicKey: [9], environment: "production", root: "apple", attestedAt: start)) == false)
            #expect(try await store.deviceKey("k1") == key)
            #expect(try await store.advanceCounter(of: "k1", to: 3))
            #expect(try await store.advanceCounter(of: "k1", to: 3) == false)
            #expect(try await store.advanceCounter(of: "k1", to: 2) == false)
            #expect(try await store.advanceCounter(of: "nobody", to: 9) == false)
            #expect(try await store.deviceKey("k1")?.counter == 3)
            let raced = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 { group.addTask { try await store.advanceCounter(of: "k1", to: 4) } }
                return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(raced == 1)
            #expect(try await store.deviceKey("k1")?.counter == 4)
        }
    }
}
