import DiscordREST
import Foundation
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore

private let alice = UserID("crash-alice")!
private let bob = UserID("crash-bob")!
private let beta = AppID("beta")!
private let start = Date(timeIntervalSince1970: 1_800_000_000)

private func report(_ id: UInt64, owner: UserID = alice, group: Int64, key: String? = nil, at seconds: Double = 0, awaiting: [String] = [])
    -> CrashReport
{
    CrashReport(
        id: Snowflake(id), owner: owner, group: group, kind: "crash", appVersion: "4.2", appBuild: "420", payloadKey: key ?? "payload-\(id)",
        detail: #"{"frames":["a \"quoted\" ✓"]}"#, awaiting: awaiting, createdAt: start.addingTimeInterval(seconds))
}

/// Crash reports, groups, rules and dSYMs: the same on every store.
@Suite("CrashRecords contract")
struct CrashRecordsContract {
    @Test(arguments: StoreKind.available)
    func aGroupIsMadeOnceAndMovesWithWhatIsSeen(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let first = try await store.recordCrashGroup(
                app: .default, signatureHash: "abc", signature: "crash|EXC_BAD_ACCESS", kind: "crash", title: "EXC_BAD_ACCESS", version: "4.1",
                at: start)
            let again = try await store.recordCrashGroup(
                app: .default, signatureHash: "abc", signature: "crash|EXC_BAD_ACCESS", kind: "crash", title: "EXC_BAD_ACCESS · f()",
                version: "4.2", at: start.addingTimeInterval(60))
            #expect(again.number == first.number)
            #expect(again.firstVersion == "4.1" && again.lastVersion == "4.2" && again.title == "EXC_BAD_ACCESS")
            #expect(again.firstSeen == start && again.lastSeen == start.addingTimeInterval(60))
            // The same signature in another app is another group.
            let other = try await store.recordCrashGroup(
                app: beta, signatureHash: "abc", signature: "s", kind: "crash", title: "t", version: "1.0", at: start)
            #expect(other.number != first.number)
            #expect(try await store.crashGroup(app: .default, number: first.number) == again)
            #expect(try await store.crashGroup(app: beta, number: first.number) == nil)

            var ruled = again
            (ruled.fixedIn, ruled.ignored, ruled.regressedIn, ruled.title) = ("4.3", true, "4.4", "not saved")
            try await store.saveCrashRules(ruled)
            let read = try #require(try await store.crashGroup(app: .default, number: first.number))
            #expect(read.fixedIn == "4.3" && read.ignored && read.regressedIn == "4.4" && read.title == again.title)
            // A new sighting keeps the rules.
            let seen = try await store.recordCrashGroup(
                app: .default, signatureHash: "abc", signature: "s", kind: "crash", title: "t2", version: "4.4", at: start.addingTimeInterval(120))
            #expect(seen.fixedIn == "4.3" && seen.ignored)
            // A report seen late (a regrouping of an old one) moves no version back.
            let late = try await store.recordCrashGroup(
                app: .default, signatureHash: "abc", signature: "s", kind: "crash", title: "t3", version: "4.0", at: start)
            #expect(late.lastVersion == "4.4" && late.lastSeen == start.addingTimeInterval(120))
            // A regression is noted on its own: the rules stay.
            try await store.markCrashRegression(app: .default, number: first.number, version: "4.5")
            let regressed = try #require(try await store.crashGroup(app: .default, number: first.number))
            #expect(regressed.regressedIn == "4.5" && regressed.fixedIn == "4.3" && regressed.ignored)
            try await store.markCrashRegression(app: beta, number: first.number, version: "9")
            #expect(try await store.crashGroup(app: .default, number: first.number)?.regressedIn == "4.5")
        }
    }

    /// Numbers are drawn for new groups only: a sighting of a known one draws none.
    @Test(arguments: StoreKind.available)
    func sightingsDrawNoGroupNumbers(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let first = try await store.recordCrashGroup(app: .default, signatureHash: "n1", signature: "s", kind: "crash", title: "t", version: "1", at: start)
            for _ in 0..<5 {
                _ = try await store.recordCrashGroup(app: .default, signatureHash: "n1", signature: "s", kind: "crash", title: "t", version: "1", at: start)
            }
            let second = try await store.recordCrashGroup(app: .default, signatureHash: "n2", signature: "s", kind: "crash", title: "t", version: "1", at: start)
            #expect(second.number == first.number + 1)
        }
    }

    @Test(arguments: StoreKind.available)
    func reportsRoundTripAndAPayloadIsKeptOnce(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            var full = report(1_500_000_000_000_000_001, group: 7, awaiting: ["6C2F7D3E-9A41-4B1C-8E55-0D3A2B1C4F60", "0A"])
            (full.noteID, full.noteDiscordID, full.threadID, full.followUp) = (Snowflake(11), Snowflake(UInt64.max - 3), Snowflake(13), "answer")
            #expect(try await store.saveCrashReport(full))
            #expect(try await store.crashReport(full.id) == full)
            #expect(try await store.crashReport(note: Snowflake(11)) == full)
            #expect(try await store.crashReport(owner: alice, payloadKey: full.payloadKey) == full)
            // Another report of the same payload is not kept; the first is changed in place.
            #expect(try await !store.saveCrashReport(report(1_500_000_000_000_000_002, group: 8, key: full.payloadKey)))
            var changed = full
            (changed.group, changed.awaiting, changed.followUp, changed.detail) = (9, [], nil, "{}")
            #expect(try await store.saveCrashReport(changed))
            #expect(try await store.crashReport(full.id) == changed)
            #expect(try await store.crashReports(of: alice) == [changed])
            #expect(try await store.crashReports(of: bob).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func countsListsAndAppearancesComeFromTheReports(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let busy = try await store.recordCrashGroup(app: .default, signatureHash: "busy", signature: "s1", kind: "crash", title: "busy", version: "4.2", at: start.addingTimeInterval(10))
            let quiet = try await store.recordCrashGroup(app: .default, signatureHash: "quiet", signature: "s2", kind: "hang", title: "quiet", version: "4.2", at: start.addingTimeInterval(20))
            let old = try await store.recordCrashGroup(app: .default, signatureHash: "old", signature: "s3", kind: "crash", title: "old", version: "4.0", at: start.addingTimeInterval(-30 * 86_400))
            var one = report(1_500_000_000_000_000_010, owner: alice, group: busy.number, at: 1)
            one.threadID = Snowflake(101)
            try await store.saveCrashReport(one)
            try await store.saveCrashReport(report(1_500_000_000_000_000_011, owner: alice, group: busy.number, at: 2))
            var two = report(1_500_000_000_000_000_012, owner: bob, group: busy.number, at: 3)
            two.threadID = Snowflake(102)
            try await store.saveCrashReport(two)
            try await store.saveCrashReport(report(1_500_000_000_000_000_013, owner: alice, group: quiet.number, at: 4))
            try await store.saveCrashReport(report(1_500_000_000_000_000_014, owner: bob, group: old.number, at: -30 * 86_400))

            let counts = try await store.crashCounts(app: .default, group: busy.number, since: start.addingTimeInterval(2))
            #expect(counts == CrashGroupCounts(users: 2, reports: 3, recentUsers: 2, recentReports: 2))
            let listed = try await store.crashGroups(app: .default, since: start.addingTimeInterval(-7 * 86_400), limit: 10)
            #expect(listed.map(\.group.number) == [busy.number, quiet.number])
            #expect(listed.first?.counts == CrashGroupCounts(users: 2, reports: 3, recentUsers: 2, recentReports: 3))
            #expect(try await store.crashGroups(app: beta, since: .distantPast, limit: 10).isEmpty)
            #expect(try await store.crashGroups(app: .default, since: .distantPast, limit: 1).count == 1)

            let seen = try await store.crashAppearances(app: .default, group: busy.number, limit: 10)
            #expect(seen == [
                CrashAppearance(owner: bob, threadID: Snowflake(102), reports: 1, lastSeen: start.addingTimeInterval(3)),
                CrashAppearance(owner: alice, threadID: Snowflake(101), reports: 2, lastSeen: start.addingTimeInterval(2)),
            ])
        }
    }

    @Test(arguments: StoreKind.available)
    func reportsWaitingForADSYMAreFoundByItsUUID(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let uuid = "6C2F7D3E-9A41-4B1C-8E55-0D3A2B1C4F60"
            try await store.saveCrashReport(report(1_500_000_000_000_000_020, group: 1, at: 2, awaiting: ["AAAA", uuid]))
            try await store.saveCrashReport(report(1_500_000_000_000_000_021, owner: bob, group: 1, at: 1, awaiting: [uuid]))
            try await store.saveCrashReport(report(1_500_000_000_000_000_022, group: 1, at: 0, awaiting: ["6C2F7D3E"]))
            try await store.saveCrashReport(report(1_500_000_000_000_000_023, owner: UserID(app: beta, local: alice), group: 1, awaiting: [uuid]))
            let found = try await store.crashReports(awaiting: uuid, app: .default, limit: 10)
            #expect(found.map(\.id) == [Snowflake(1_500_000_000_000_000_021), Snowflake(1_500_000_000_000_000_020)])
            #expect(try await store.crashReports(awaiting: uuid, app: .default, limit: 1).count == 1)
        }
    }

    @Test(arguments: StoreKind.available)
    func aUserIsAnsweredOncePerCrash(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            #expect(try await store.markCrashAnswered(owner: alice, group: 3, at: start))
            #expect(try await !store.markCrashAnswered(owner: alice, group: 3, at: start.addingTimeInterval(1)))
            // Taken back (its note was not kept): the next report answers.
            try await store.forgetCrashAnswer(owner: alice, group: 3)
            #expect(try await store.markCrashAnswered(owner: alice, group: 3, at: start.addingTimeInterval(2)))
            #expect(try await store.markCrashAnswered(owner: alice, group: 4, at: start))
            #expect(try await store.markCrashAnswered(owner: bob, group: 3, at: start))
        }
    }

    @Test(arguments: StoreKind.available)
    func dSYMsAreKeptPerAppAndUUID(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            let bytes = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 * 31) })
            let file = DSYMFile(app: .default, uuid: "AAAA", arch: "arm64", name: "MyShop", bytes: bytes, uploadedAt: start)
            try await store.saveDSYM(file)
            try await store.saveDSYM(DSYMFile(app: beta, uuid: "AAAA", arch: "arm64e", name: "Other", bytes: Data([1, 2, 3]), uploadedAt: start))
            #expect(try await store.dsym(app: .default, uuid: "AAAA") == file)
            #expect(try await store.dsym(app: .default, uuid: "BBBB") == nil)
            let described = try await store.dsymDescriptions(app: .default, uuids: ["AAAA", "BBBB"])
            #expect(described.map(\.name) == ["MyShop"] && described.first?.bytes.isEmpty == true && described.first?.size == 70_000)
            #expect(try await store.dsymDescriptions(app: .default, uuids: []).isEmpty)
            #expect(try await store.dsymUsage(app: nil) == (2, 70_003))
            #expect(try await store.dsymUsage(app: beta) == (1, 3))
            // Uploaded again: replaced.
            try await store.saveDSYM(DSYMFile(app: .default, uuid: "AAAA", arch: "arm64", name: "MyShop", bytes: Data([9]), uploadedAt: start))
            #expect(try await store.dsym(app: .default, uuid: "AAAA")?.bytes == Data([9]))
        }
    }

    @Test(arguments: StoreKind.available)
    func anErasureTakesTheUsersReportsAndAnswersAndLeavesTheGroups(kind: StoreKind) async throws {
        try await kind.with { (store: any UserStore) async throws in
            try await store.withUser(alice) { $0.record = UserRecord(id: alice) }
            let group = try await store.recordCrashGroup(app: .default, signatureHash: "e", signature: "s", kind: "crash", title: "t", version: "1", at: start)
            try await store.saveCrashReport(report(1_500_000_000_000_000_030, owner: alice, group: group.number))
            try await store.saveCrashReport(report(1_500_000_000_000_000_031, owner: bob, group: group.number))
            _ = try await store.markCrashAnswered(owner: alice, group: group.number, at: start)
            _ = try await store.eraseUser(alice) { _ in }
            #expect(try await store.crashReports(of: alice).isEmpty)
            #expect(try await store.crashReports(of: bob).count == 1)
            #expect(try await store.crashGroup(app: .default, number: group.number) != nil)
            // Answered again after coming back: the old answer went with the user.
            #expect(try await store.markCrashAnswered(owner: alice, group: group.number, at: start))
        }
    }
}
