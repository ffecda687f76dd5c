import DiscordREST
import Foundation
import ThreadDeskCore

/// One crash or hang diagnostic a user's app uploaded (MetricKit), as ThreadDesk keeps it: the
/// group its signature put it in, what it said (`detail`, JSON the server writes and reads), the
/// binaries it still waits for a dSYM of, and the note that shows it in the user's thread.
public struct CrashReport: Sendable, Hashable {
    public var id: Snowflake
    public var owner: UserID
    /// The crash group's number (`CrashGroup.number`).
    public var group: Int64
    /// "crash" or "hang".
    public var kind: String
    public var appVersion: String
    public var appBuild: String
    /// The upload's SHA-256 and the diagnostic's place in it: the same payload sent twice is one report.
    public var payloadKey: String
    /// The diagnostic and its symbols, as the server encodes them.
    public var detail: String
    /// UUIDs of the app's binaries whose dSYM had not come when it was symbolicated (a later
    /// upload symbolicates it then).
    public var awaiting: [String]
    /// The outbox id of its note (the note's id in the API's terms: Discord's stays internal).
    public var noteID: Snowflake?
    /// Discord's id of the note once posted, and its thread: a later symbolication edits it.
    public var noteDiscordID: Snowflake?
    public var threadID: Snowflake?
    /// What the note's delivery does after it: `answer` (a rule's reply to the user), `regression`
    /// (a note that a fixed crash came back); nil when nothing, or once done.
    public var followUp: String?
    public var createdAt: Date

    public init(
        id: Snowflake, owner: UserID, group: Int64, kind: String, appVersion: String, appBuild: String, payloadKey: String, detail: String,
        awaiting: [String] = [], noteID: Snowflake? = nil, noteDiscordID: Snowflake? = nil, threadID: Snowflake? = nil, followUp: String? = nil,
        createdAt: Date
    ) {
        (self.id, self.owner, self.group, self.kind, self.appVersion, self.appBuild) = (id, owner, group, kind, appVersion, appBuild)
        (self.payloadKey, self.detail, self.awaiting, self.noteID, self.noteDiscordID) = (payloadKey, detail, awaiting, noteID, noteDiscordID)
        (self.threadID, self.followUp, self.createdAt) = (threadID, followUp, createdAt)
    }
}

/// Reports of one signature, across users and versions, within one app; and the rules the
/// developer set for it.
public struct CrashGroup: Sendable, Hashable {
    /// Shown as `C<number>` (`/crash C12`); unique in the deployment.
    public var number: Int64
    public var app: AppID
    public var signatureHash: String
    public var signature: String
    public var kind: String
    /// One line for lists: the exception and the top frame.
    public var title: String
    public var firstVersion: String
    public var lastVersion: String
    public var firstSeen: Date
    public var lastSeen: Date
    /// `/crash fixed`: reports from older versions are answered by themselves.
    public var fixedIn: String?
    /// `/crash ignore`: its reports put no crash tag on threads.
    public var ignored: Bool
    /// A report from `fixedIn` or later came: the version it came from.
    public var regressedIn: String?

    public init(
        number: Int64, app: AppID, signatureHash: String, signature: String, kind: String, title: String, firstVersion: String,
        lastVersion: String, firstSeen: Date, lastSeen: Date, fixedIn: String? = nil, ignored: Bool = false, regressedIn: String? = nil
    ) {
        (self.number, self.app, self.signatureHash, self.signature, self.kind, self.title) = (number, app, signatureHash, signature, kind, title)
        (self.firstVersion, self.lastVersion, self.firstSeen, self.lastSeen) = (firstVersion, lastVersion, firstSeen, lastSeen)
        (self.fixedIn, self.ignored, self.regressedIn) = (fixedIn, ignored, regressedIn)
    }
}

/// How many users and reports a group has: in all, and since a moment (the last 7 days).
public struct CrashGroupCounts: Sendable, Hashable {
    public var users: Int
    public var reports: Int
    public var recentUsers: Int
    public var recentReports: Int

    public init(users: Int = 0, reports: Int = 0, recentUsers: Int = 0, recentReports: Int = 0) {
        (self.users, self.reports, self.recentUsers, self.recentReports) = (users, reports, recentUsers, recentReports)
    }
}

/// A thread a group's reports appear in.
public struct CrashAppearance: Sendable, Hashable {
    public var owner: UserID
    public var threadID: Snowflake?
    public var reports: Int
    public var lastSeen: Date

    public init(owner: UserID, threadID: Snowflake?, reports: Int, lastSeen: Date) {
        (self.owner, self.threadID, self.reports, self.lastSeen) = (owner, threadID, reports, lastSeen)
    }
}

/// A debug-symbols file of one binary of an app (one slice of a dSYM), found by its UUID.
public struct DSYMFile: Sendable, Hashable {
    public var app: AppID
    /// Uppercase `8-4-4-4-12`.
    public var uuid: String
    public var arch: String
    /// The binary's name (the DWARF file's), e.g. `MyShop`.
    public var name: String
    /// The file the slice is in (a fat file serves each of its slices); empty when only its
    /// description was asked for.
    public var bytes: Data
    public var size: Int
    public var uploadedAt: Date

    public init(app: AppID, uuid: String, arch: String, name: String, bytes: Data, size: Int? = nil, uploadedAt: Date) {
        (self.app, self.uuid, self.arch, self.name, self.bytes) = (app, uuid, arch, name, bytes)
        (self.size, self.uploadedAt) = (size ?? bytes.count, uploadedAt)
    }
}

/// Crash reports, their groups and rules, and the dSYMs they are symbolicated with; shared by
/// every replica. A user's reports are written under their lock (`withUser`); groups are shared
/// by users, so their writes are single statements that any replica may run at once.
public protocol CrashRecords: Sendable {
    /// The group of `signatureHash` in `app`, made when it is new (with `title`); seen now (`at`)
    /// in `version`: its last version and time move forward (its first and its title stay). One statement: two replicas recording the
    /// same new signature at once get one group.
    func recordCrashGroup(
        app: AppID, signatureHash: String, signature: String, kind: String, title: String, version: String, at: Date
    ) async throws -> CrashGroup
    func crashGroup(app: AppID, number: Int64) async throws -> CrashGroup?
    /// Writes a group's rules (`fixedIn`, `ignored`, `regressedIn`); the rest stays as recorded.
    func saveCrashRules(_ group: CrashGroup) async throws
    /// Notes that the group came back in `version` (its `regressedIn`), its other rules untouched:
    /// one statement, so an agent's rule set meanwhile is kept.
    func markCrashRegression(app: AppID, number: Int64, version: String) async throws
    /// The app's groups with a report since `since`, the most users since then first.
    func crashGroups(app: AppID, since: Date, limit: Int) async throws -> [(group: CrashGroup, counts: CrashGroupCounts)]
    func crashCounts(app: AppID, group: Int64, since: Date) async throws -> CrashGroupCounts
    /// The threads a group's reports appear in, the latest first.
    func crashAppearances(app: AppID, group: Int64, limit: Int) async throws -> [CrashAppearance]

    /// Keeps a report as given (replacing the one with its id). A second report with another id
    /// and the same owner and `payloadKey` is not kept (false): the first stays.
    @discardableResult func saveCrashReport(_ report: CrashReport) async throws -> Bool
    func crashReport(_ id: Snowflake) async throws -> CrashReport?
    func crashReport(owner: UserID, payloadKey: String) async throws -> CrashReport?
    /// The report a note (its outbox id) shows.
    func crashReport(note: Snowflake) async throws -> CrashReport?
    /// The user's reports, oldest first (their export).
    func crashReports(of owner: UserID) async throws -> [CrashReport]
    /// The app's reports that wait for the dSYM of `uuid`, oldest first.
    func crashReports(awaiting uuid: String, app: AppID, limit: Int) async throws -> [CrashReport]
    /// Notes that a rule answered `owner` about `group`; false when it had already (once per user and crash).
    func markCrashAnswered(owner: UserID, group: Int64, at: Date) async throws -> Bool
    /// Takes back `markCrashAnswered` (the report that was to answer was not kept).
    func forgetCrashAnswer(owner: UserID, group: Int64) async throws

    /// Keeps a dSYM slice (replacing one of the same app and UUID).
    func saveDSYM(_ file: DSYMFile) async throws
    /// The slice with its bytes; nil when none was uploaded.
    func dsym(app: AppID, uuid: String) async throws -> DSYMFile?
    /// The slices among `uuids` the app has, without their bytes.
    func dsymDescriptions(app: AppID, uuids: [String]) async throws -> [DSYMFile]
    /// How many slices, and bytes, the app keeps (all apps' when nil).
    func dsymUsage(app: AppID?) async throws -> (count: Int, bytes: Int)
}
