import Prometheus
import NIOHTTP1
import AsyncHTTPClient
import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// Serves attachments of a user's conversation from ThreadDesk's own URL, streaming the bytes
/// from Discord's CDN. Why not a redirect: the app would get (and cache) a signed CDN URL that
/// stops working after about a day; through here one URL works for as long as the message
/// exists, the bearer token guards it, and expired URLs are signed anew where the app never
/// sees them. Ranges pass through, so a video can be scrubbed.
struct AttachmentProxy: Sendable {
    let store: any MirrorStore
    let discord: DiscordClient<AnyClock>
    let cdn: DiscordCDN
    let metrics: ServerMetrics
    let logger: Logger
    let now: @Sendable () -> Date
    /// The curated answers, whose files every user may fetch; nil without a FAQ forum.
    var faq: FAQBook? = nil
    /// Fresh URLs signed since the mirror last learned the message, by attachment id.
    let fresh = FreshURLs()
    /// A download (the whole body) must end by then, however slowly the app reads.
    static let downloadDeadline: Duration = .seconds(300)
    /// A URL this close to its expiry is signed anew before use.
    static let expiryMargin: TimeInterval = 60

    /// The attachment `id` of a visible message in `record`'s thread, or 404. `beforeRefresh`
    /// runs before an expired URL is signed anew (a Discord call), and may refuse it.
    func response(
        for id: Snowflake, record: UserRecord, range: String?, beforeRefresh: @Sendable () async throws -> Void
    ) async throws -> Response {
        let attachment: MirroredMessage.Attachment
        if let thread = record.threadID.flatMap({ Snowflake($0) }),
            let message = try await store.mirroredMessage(withAttachment: id, thread: thread), message.isShown,
            let found = message.attachments.first(where: { $0.id == id })
        {
            attachment = found
        } else if let found = await faq?.attachment(id) {
            attachment = found
        } else {
            throw SupportFailure.attachmentNotFound(gone: false)
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
        guard [200, 206, 416].contains(answer.status.code) else {
            logger.notice("Discord's CDN refused an attachment", metadata: ["attachment": "\(id)", "status": "\(answer.status.code)"])
            throw SupportFailure.attachmentUnavailable
        }
        metrics.attachmentsServed.increment()
        return Self.relay(answer, attachment: attachment)
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
        metrics.attachmentURLsRefreshed.increment()
        fresh.remember(url, for: attachment.id)
        return url
    }

    /// The CDN's answer with our headers: the type the mirror knows, inline only for images and
    /// video (anything else downloads, so nothing can run on the API's origin), a name that agrees
    /// with that type (an agent's `page.html` sent as text is saved as `page.html.txt`), cacheable
    /// by the app alone (an attachment's bytes never change).
    static func relay(_ answer: HTTPClientResponse, attachment: MirroredMessage.Attachment) -> Response {
        // Never a page or a script under its own type, whatever an agent posted.
        let type = AttachmentRules.servedType(attachment.contentType)
        let inline = type.hasPrefix("image/") || type.hasPrefix("video/")
        let name = AttachmentRules.filename(AttachmentRules.sanitizedFilename(attachment.filename), agreeingWith: type)
        var headers: HTTPFields = [
            .contentType: type,
            .contentDisposition: AttachmentRules.contentDisposition(inline: inline, filename: name),
            .cacheControl: "private, max-age=86400",
            .acceptRanges: "bytes",
            .xContentTypeOptions: "nosniff",
            .contentSecurityPolicy: "default-src 'none'; sandbox",
        ]
        if let length = answer.headers.first(name: "content-length") { headers[.contentLength] = length }
        if let range = answer.headers.first(name: "content-range") { headers[.contentRange] = range }
        let body = answer.body
        return Response(
            status: .init(code: Int(answer.status.code)), headers: headers,
            body: ResponseBody { writer in
                for try await chunk in body { try await writer.write(chunk) }
                try await writer.finish(nil)
            })
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

extension HTTPField.Name {
    static let xContentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
}
