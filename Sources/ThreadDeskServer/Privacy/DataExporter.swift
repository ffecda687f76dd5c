import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// A user's data as they may ask for it (the right of access): what ThreadDesk keeps about them,
/// and their conversation as the API shows it, a bounded page at a time from the mirror.
struct DataExporter: Sendable {
    let store: any UserRecords & MirrorStore & CrashRecords & UserProfiles & ArticleReads
    /// Brings the current thread's mirror up to date before a first page (as a read of
    /// `GET /v1/messages` would); nil exports the mirror as it stands (the admin tool).
    let sync: MirrorSync?
    let now: @Sendable () -> Date

    static let defaultPage = 500
    static let maximumPage = 1000
    /// Article reads listed (the newest beyond are few: one per article and day).
    static let maximumReads = 10_000

    /// One page: the kept facts, and up to `limit` messages after `after` (from the start when nil).
    /// - Parameters:
    ///   - record: The user whose data it is.
    ///   - after: The last message of the previous page; nil for the first page.
    ///   - limit: Messages at most (1 to `maximumPage`).
    /// - Throws: `DiscordError` when the mirror must catch up for a first page and cannot, and the
    ///   store's errors.
    func page(for record: UserRecord, after: Snowflake?, limit: Int) async throws -> DataExport {
        if after == nil, let sync, let thread = record.threadID.flatMap({ Snowflake($0) }) {
            _ = try await sync.ensureCurrent(thread, owner: record.id)
        }
        let page = try await store.conversation(of: record.id, after: after, limit: min(max(limit, 1), Self.maximumPage))
        return DataExport(
            user: try await kept(record), messages: page.messages.map(SupportMessage.init), hasMore: page.hasMore,
            exportedAt: Self.timestamp(now()), crashReports: after == nil ? try await crashReports(of: record.id) : nil)
    }

    /// What ThreadDesk keeps about the user besides the messages; secrets only by whether they exist.
    /// - Parameter record: The user whose data it is.
    /// - Throws: The store's errors (the unread count).
    func kept(_ record: UserRecord) async throws -> KeptUserData {
        var kept = KeptUserData(
            userId: record.id.local.rawValue, createdAt: Self.timestamp(record.createdAt), updatedAt: Self.timestamp(record.updatedAt),
            installation: (record.installation ?? record.pendingInstallation).map(Self.fields),
            pushTokenRegistered: record.pushToken != nil, pushEnvironment: record.pushToken == nil ? nil : record.pushEnvironment?.rawValue,
            unreadCount: try await LiveFeed(store: store).unreadCount(record), lastReadMessageId: record.lastReadMessageID,
            liveSessions: record.liveTokenHashes.count, threadId: record.threadID)
        let profile = try await store.profile(of: record.id)
        kept.attributes = profile.attributes
        kept.activity = profile.activity.map {
            ActivityEvent(id: $0.id, name: $0.name, properties: $0.properties, occurredAt: Self.timestamp($0.occurredAt))
        }
        kept.articleReads = try await store.articleReads(of: record.id, limit: Self.maximumReads).map {
            ExportedArticleRead(articleId: $0.article, readAt: Self.timestamp($0.readAt), wroteAfter: $0.wroteAfter)
        }
        return kept
    }

    /// The user's crash reports as the export shows them: what the app sent (binaries and
    /// offsets), never what the developer's dSYMs say (their functions, files and build paths are
    /// the developer's, and a user could send any offset to read them).
    func crashReports(of id: UserID) async throws -> [ExportedCrashReport] {
        try await store.crashReports(of: id).map { report in
            let reading = CrashReading.decoded(report.detail)
            return ExportedCrashReport(
                id: report.id.description, kind: report.kind, group: "C\(report.group)", appVersion: report.appVersion, appBuild: report.appBuild,
                createdAt: Self.timestamp(report.createdAt), osVersion: reading?.diagnostic.osVersion, deviceType: reading?.diagnostic.deviceType,
                cause: reading?.cause ?? report.kind, frames: (reading?.diagnostic.threads.first?.frames ?? []).map(\.offsetName))
        }
    }

    static func fields(_ info: InstallationInfo) -> [String: String] {
        var fields = info.other
        let named: [(String, String?)] = [
            ("appVersion", info.appVersion), ("buildVersion", info.buildVersion), ("osPlatform", info.osPlatform),
            ("osVersion", info.osVersion), ("locale", info.locale), ("deviceModel", info.deviceModel),
        ]
        for (key, value) in named { if let value { fields[key] = value } }
        return fields
    }

    static func timestamp(_ date: Date) -> String { date.formatted(.iso8601) }
}
