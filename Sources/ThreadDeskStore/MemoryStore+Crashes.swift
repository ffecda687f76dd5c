import DiscordREST
import Foundation
import Synchronization
import ThreadDeskCore

/// Crash reports, groups and dSYMs in memory.
struct MemoryCrashes {
    struct GroupKey: Hashable {
        var app: AppID
        var signatureHash: String
    }

    struct AnswerKey: Hashable {
        var owner: UserID
        var group: Int64
    }

    var groups: [Int64: CrashGroup] = [:]
    var groupNumbers: [GroupKey: Int64] = [:]
    var lastNumber: Int64 = 0
    var reports: [Snowflake: CrashReport] = [:]
    var answers: Set<AnswerKey> = []
    var dsyms: [String: DSYMFile] = [:]

    func counts(app: AppID, group: Int64, since: Date) -> CrashGroupCounts {
        let reports = reports.values.filter { $0.owner.app == app && $0.group == group }
        let recent = reports.filter { $0.createdAt >= since }
        return CrashGroupCounts(
            users: Set(reports.map(\.owner)).count, reports: reports.count, recentUsers: Set(recent.map(\.owner)).count, recentReports: recent.count)
    }

    static func dsymKey(_ app: AppID, _ uuid: String) -> String { "\(app.rawValue)/\(uuid)" }
}

extension MemoryStore {
    public func recordCrashGroup(
        app: AppID, signatureHash: String, signature: String, kind: String, title: String, version: String, at date: Date
    ) async throws -> CrashGroup {
        crashes.withLock { crashes in
            let key = MemoryCrashes.GroupKey(app: app, signatureHash: signatureHash)
            if let number = crashes.groupNumbers[key], var group = crashes.groups[number] {
                if date >= group.lastSeen { group.lastVersion = version }
                group.lastSeen = max(group.lastSeen, date)
                crashes.groups[number] = group
                return group
            }
            crashes.lastNumber += 1
            let group = CrashGroup(
                number: crashes.lastNumber, app: app, signatureHash: signatureHash, signature: signature, kind: kind, title: title,
                firstVersion: version, lastVersion: version, firstSeen: date, lastSeen: date)
            (crashes.groups[group.number], crashes.groupNumbers[key]) = (group, group.number)
            return group
        }
    }

    public func crashGroup(app: AppID, number: Int64) async throws -> CrashGroup? {
        crashes.withLock { $0.groups[number].flatMap { $0.app == app ? $0 : nil } }
    }

    public func saveCrashRules(_ group: CrashGroup) async throws {
        crashes.withLock { crashes in
            guard var kept = crashes.groups[group.number], kept.app == group.app else { return }
            (kept.fixedIn, kept.ignored, kept.regressedIn) = (group.fixedIn, group.ignored, group.regressedIn)
            crashes.groups[group.number] = kept
        }
    }

    public func markCrashRegression(app: AppID, number: Int64, version: String) async throws {
        crashes.withLock { crashes in
            guard crashes.groups[number]?.app == app else { return }
            crashes.groups[number]?.regressedIn = version
        }
    }

    public func forgetCrashAnswer(owner: UserID, group: Int64) async throws {
        _ = crashes.withLock { $0.answers.remove(.init(owner: owner, group: group)) }
    }

    public func crashGroups(app: AppID, since: Date, limit: Int) async throws -> [(group: CrashGroup, counts: CrashGroupCounts)] {
        crashes.withLock { crashes in
            crashes.groups.values.filter { $0.app == app && $0.lastSeen >= since }
                .map { ($0, crashes.counts(app: app, group: $0.number, since: since)) }
                .filter { $0.1.recentReports > 0 }
                .sorted { ($0.1.recentUsers, $0.0.lastSeen) > ($1.1.recentUsers, $1.0.lastSeen) }
                .prefix(max(0, limit)).map { (group: $0.0, counts: $0.1) }
        }
    }

    public func crashCounts(app: AppID, group: Int64, since: Date) async throws -> CrashGroupCounts {
        crashes.withLock { $0.counts(app: app, group: group, since: since) }
    }

    public func crashAppearances(app: AppID, group: Int64, limit: Int) async throws -> [CrashAppearance] {
        crashes.withLock { crashes in
            let reports = crashes.reports.values.filter { $0.owner.app == app && $0.group == group }
            return Dictionary(grouping: reports, by: \.owner).map { owner, reports in
                CrashAppearance(
                    owner: owner, threadID: reports.compactMap(\.threadID).max(), reports: reports.count,
                    lastSeen: reports.map(\.createdAt).max() ?? .distantPast)
            }
            .sorted { $0.lastSeen > $1.lastSeen }.prefix(max(0, limit)).map { $0 }
        }
    }

    public func saveCrashReport(_ report: CrashReport) async throws -> Bool {
        crashes.withLock { crashes in
            if crashes.reports.values.contains(where: { $0.owner == report.owner && $0.payloadKey == report.payloadKey && $0.id != report.id }) {
                return false
            }
            crashes.reports[report.id] = report
            return true
        }
    }

    public func crashReport(_ id: Snowflake) async throws -> CrashReport? {
        crashes.withLock { $0.reports[id] }
    }

    public func crashReport(owner: UserID, payloadKey: String) async throws -> CrashReport? {
        crashes.withLock { $0.reports.values.first { $0.owner == owner && $0.payloadKey == payloadKey } }
    }

    public func crashReport(note: Snowflake) async throws -> CrashReport? {
        crashes.withLock { $0.reports.values.first { $0.noteID == note } }
    }

    public func crashReports(of owner: UserID) async throws -> [CrashReport] {
        crashes.withLock { $0.reports.values.filter { $0.owner == owner }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) } }
    }

    public func crashReports(awaiting uuid: String, app: AppID, limit: Int) async throws -> [CrashReport] {
        crashes.withLock { crashes in
            crashes.reports.values.filter { $0.owner.app == app && $0.awaiting.contains(uuid) }
                .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }.prefix(max(0, limit)).map { $0 }
        }
    }

    public func markCrashAnswered(owner: UserID, group: Int64, at date: Date) async throws -> Bool {
        crashes.withLock { $0.answers.insert(.init(owner: owner, group: group)).inserted }
    }

    public func saveDSYM(_ file: DSYMFile) async throws {
        var kept = file
        kept.size = file.bytes.count
        crashes.withLock { $0.dsyms[MemoryCrashes.dsymKey(file.app, file.uuid)] = kept }
    }

    public func dsym(app: AppID, uuid: String) async throws -> DSYMFile? {
        crashes.withLock { $0.dsyms[MemoryCrashes.dsymKey(app, uuid)] }
    }

    public func dsymDescriptions(app: AppID, uuids: [String]) async throws -> [DSYMFile] {
        crashes.withLock { crashes in
            Set(uuids).sorted().compactMap { crashes.dsyms[MemoryCrashes.dsymKey(app, $0)] }.map { file in
                var description = file
                description.bytes = Data()
                return description
            }
        }
    }

    public func dsymUsage(app: AppID?) async throws -> (count: Int, bytes: Int) {
        crashes.withLock { crashes in
            let files = crashes.dsyms.values.filter { app == nil || $0.app == app }
            return (files.count, files.reduce(0) { $0 + $1.size })
        }
    }

    func eraseCrashes(of id: UserID) {
        crashes.withLock { crashes in
            crashes.reports = crashes.reports.filter { $0.value.owner != id }
            crashes.answers = crashes.answers.filter { $0.owner != id }
        }
    }
}
