import Prometheus
import NIOHTTP1
import AsyncHTTPClient
import DiscordREST
import Foundation
import Logging
import NIOCore
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// Fetches attachments of a user's conversation from Discord's CDN for ThreadDesk's own URL
/// (`AttachmentRoutes` streams them on). Why not a redirect: the app would get (and cache) a signed CDN URL that
/// stops working after about a day; through here one URL works for as long as the message
/// exists, the bearer token guards it, and expired URLs are signed anew where the app never
/// sees them. Ranges pass through, so a video can be scrubbed.
struct AttachmentProxy: Sendable {
    let store: any MirrorStore & OutboxStore & UserRecords
    let discord: DiscordClient<AnyClock>
    let cdn: DiscordCDN
    let metrics: ServerMetrics
    let logger: Logger
    let now: @Sendable () -> Date
    /// Each app's curated answers, whose files its users may download too.
    var faq = FAQShelf()
    /// Fresh URLs signed since the mirror last learned the message, by attachment id.
    let fresh = FreshURLs()
    /// A download (the whole body) must end by then, however slowly the app reads.
    static let downloadDeadline: Duration = .seconds(300)
    /// A URL this close to its expiry is signed anew before use.
    static let expiryMargin: TimeInterval = 60

    /// The bytes of an attachment, and what the CDN said of the part of them it sends.
    struct Download: Sendable {
        /// What the mirror knows of the file: its type and name are ours, not the CDN's.
        let attachment: MirroredMessage.Attachment
        let part: Part
        /// The CDN's `Content-Length`, when it gave one.
        let length: String?
        let bytes: HTTPClientResponse.Body

        /// Which part of the file the download is: a range asked for is passed to the CDN as is.
        enum Part: Sendable, Equatable {
            case whole
            /// The range asked for (`Content-Range`).
            case range(String?)
            /// A range the file does not have (`Content-Range` says its size).
            case unsatisfiable(String?)
        }
    }

    /// The attachment `id` of a visible message in `record`'s thread (or of a curated answer),
    /// fetched from Discord's CDN, its URL signed anew when it expired.
    /// - Parameters:
    ///   - id: The attachment's id.
    ///   - record: The user asking: only their own conversation's files are theirs.
    ///   - range: A `bytes=` range to pass on, or nil for the whole file.
    ///   - beforeRefresh: Runs before an expired URL is signed anew (a Discord call), and may
    ///     refuse it by throwing.
    /// - Throws: `SupportFailure.attachmentNotFound` when the user has no such attachment (or
    ///   Discord no longer has it), `SupportFailure.attachmentUnavailable` when the CDN fails,
    ///   and whatever `beforeRefresh` throws.
    func download(
        _ id: Snowflake, record: UserRecord, range: String?, beforeRefresh: @Sendable () async throws -> Void
    ) async throws -> Download {
        // The record was read when the request came: a delivery may since have moved the user's
        // files into their new thread, or taken a file out of the outbox once Discord had it.
        // Missed there, the file is looked for once more with the record as the user's turn
        // leaves it: a delivery under way (its thread made, the files moved, the record not yet
        // saved) finishes first.
        let located: Located
        if let found = try await locate(id, record: record) {
            located = found
        } else if let now = try await store.withUser(record.id, idempotencyKey: nil, work: .brief, { context in context.record }),
            let found = try await locate(id, record: now)
        {
            located = found
        } else {
            throw SupportFailure.attachmentNotFound(gone: false)
        }
        let attachment: MirroredMessage.Attachment
        switch located {
        case .waiting(let download): return download
        case .posted(let found): attachment = found
        }
        var url = fresh.url(for: id, at: now()) ?? attachment.url
        var refreshed = false
        if let expiry = DiscordCDN.expiry(of: url), expiry.timeIntervalSince(now()) < Self.expiryMargin {
            try await beforeRefresh()
            url = try await refresh(attachment)
            refreshed = true
        }
        var answer = try await fetch(url, range: range)
        if [403, 404, 410].contains(answer.status.code), !refreshed {
            // Expired early, or signed by a key Discord rotated: sign anew once.
            try await beforeRefresh()
            url = try await refresh(attachment)
            answer = try await fetch(url, range: range)
        }
        let contentRange = answer.headers.first(name: "content-range")
        let part: Download.Part
        switch answer.status.code {
        case 200: part = .whole
        case 206: part = .range(contentRange)
        case 416: part = .unsatisfiable(contentRange)
        default:
            logger.notice("Discord's CDN refused an attachment", metadata: ["attachment": "\(id)", "status": "\(answer.status.code)"])
            throw SupportFailure.attachmentUnavailable
        }
        metrics.files.attachmentsServed.increment()
        return Download(attachment: attachment, part: part, length: answer.headers.first(name: "content-length"), bytes: answer.body)
    }

    /// Where an attachment is: in the outbox still (its download, from the store), or in Discord.
    private enum Located {
        case waiting(Download)
        case posted(MirroredMessage.Attachment)
    }

    /// The attachment `id` of `record`'s conversation (or of their app's curated answers); nil
    /// when there is none, or the outbox no longer holds a file the mirror says it does.
    private func locate(_ id: Snowflake, record: UserRecord) async throws -> Located? {
        if let thread = (record.threadID ?? record.pendingThread).flatMap({ Snowflake($0) }),
            let message = try await store.mirroredMessage(withAttachment: id, thread: thread), message.isShown,
            let found = message.attachments.first(where: { $0.id == id })
        {
            guard let index = OutboxFiles.index(found) else { return .posted(found) }
            return try await waiting(found, file: index, of: message).map(Located.waiting)
        }
        return await faq.book(for: record.id.app)?.attachment(id).map(Located.posted)
    }

    /// A file of a message the outbox keeps (Discord does not have it yet): from the store, whole;
    /// nil when the outbox let it go meanwhile.
    private func waiting(_ attachment: MirroredMessage.Attachment, file index: Int, of message: MirroredMessage) async throws -> Download? {
        guard let item = try await store.outboxItem(message.id), item.files.indices.contains(index) else { return nil }
        let bytes = item.files[index].bytes
        metrics.files.attachmentsServed.increment()
        return Download(attachment: attachment, part: .whole, length: String(bytes.count), bytes: .bytes(ByteBuffer(bytes: bytes)))
    }

    private func fetch(_ url: String, range: String?) async throws -> HTTPClientResponse {
        do {
            return try await cdn.fetch(url, range: range, timeout: Self.downloadDeadline)
        } catch DiscordCDN.Failure.notAllowed {
            logger.error("An attachment URL is not on Discord's CDN; refusing to fetch it", metadata: ["host": "\(URLComponents(string: url)?.host ?? "?")"])
            throw SupportFailure.attachmentNotFound(gone: false)
        } catch {
            throw SupportFailure.attachmentUnavailable
        }
    }

    /// A newly signed URL for the attachment (Discord's `POST /attachments/refresh-urls`).
    private func refresh(_ attachment: MirroredMessage.Attachment) async throws -> String {
        let refreshed = try await discord.refreshAttachmentURLs([attachment.url])
        guard let url = refreshed.first?.refreshed else { throw SupportFailure.attachmentNotFound(gone: true) }
        metrics.files.attachmentURLsRefreshed.increment()
        fresh.remember(url, for: attachment.id)
        return url
    }
}

/// URLs signed anew, kept until shortly before they expire (bounded: the oldest go first).
final class FreshURLs: Sendable {
    private let urls = Mutex<[Snowflake: String]>([:])
    private static let limit = 10_000

    func url(for id: Snowflake, at now: Date) -> String? {
        urls.withLock { urls in
            guard let url = urls[id] else { return nil }
            if let expiry = DiscordCDN.expiry(of: url), expiry.timeIntervalSince(now) < AttachmentProxy.expiryMargin {
                urls[id] = nil
                return nil
            }
            return url
        }
    }

    func remember(_ url: String, for id: Snowflake) {
        urls.withLock { urls in
            if urls.count >= Self.limit, let oldest = urls.keys.min() { urls[oldest] = nil }
            urls[id] = url
        }
    }
}

/// The files of a message the outbox keeps, as its mirror row lists them before Discord has them:
/// their URL names the file's place in the outbox item (never shown: apps get `/v1/attachments/{id}`).
enum OutboxFiles {
    static let scheme = "outbox:"

    static func url(index: Int) -> String { scheme + String(index) }

    /// The file's place in its outbox item, for an attachment the outbox holds.
    static func index(_ attachment: MirroredMessage.Attachment) -> Int? {
        guard attachment.url.hasPrefix(scheme) else { return nil }
        return Int(attachment.url.dropFirst(scheme.count))
    }
}
