import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Files of messages, fetched with the token from ThreadDesk's own attachment URLs only.
extension ThreadDeskClient {
    /// The bytes of an attachment (its `url` is ThreadDesk's, fetched with the token).
    public func attachmentData(_ attachment: SupportMessage.Attachment) async throws(ThreadDeskError) -> Data {
        try await authorized { token throws(ThreadDeskError) in
            let path = attachment.url.hasPrefix("/") ? String(attachment.url.dropFirst()) : attachment.url
            var request = request(path, token: token)
            request.setValue("*/*", forHTTPHeaderField: "Accept")
            return try await transport.send(request).body
        }
    }

    /// The bytes of a file at one of ThreadDesk's own attachment URLs, fetched with the token.
    /// Any other URL is refused: the token goes to the configured server's attachments only.
    public func data(at url: URL) async throws(ThreadDeskError) -> Data {
        guard Self.isAttachmentURL(url, of: configuration.serverURL) else {
            throw .invalidResponse("\(url.absoluteString) is not a ThreadDesk attachment")
        }
        return try await authorized { token throws(ThreadDeskError) in
            var request = URLRequest(url: url)
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.setValue("*/*", forHTTPHeaderField: "Accept")
            return try await transport.send(request).body
        }
    }

    /// Whether `url` is `<server>/v1/attachments/…` on the server's scheme, host and port, with
    /// no credentials, fragment, dot segments or encoded slashes that could lead elsewhere.
    nonisolated static func isAttachmentURL(_ url: URL, of server: URL) -> Bool {
        guard let target = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let base = URLComponents(url: server, resolvingAgainstBaseURL: false),
            target.user == nil, target.password == nil, target.fragment == nil,
            target.scheme?.lowercased() == base.scheme?.lowercased(),
            target.host?.lowercased() == base.host?.lowercased(),
            (target.port ?? defaultPort(target.scheme)) == (base.port ?? defaultPort(base.scheme))
        else { return false }
        let path = target.percentEncodedPath
        let lowered = path.lowercased()
        guard !lowered.contains("%2f"), !lowered.contains("%5c"), !path.contains("\\") else { return false }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !segments.contains(where: { segment in
            let decoded = segment.removingPercentEncoding ?? String(segment)
            return decoded == "." || decoded == ".."
        }) else { return false }
        let prefix = (base.percentEncodedPath.hasSuffix("/") ? String(base.percentEncodedPath.dropLast()) : base.percentEncodedPath)
            + "/v1/attachments/"
        return path.hasPrefix(prefix) && path.count > prefix.count
    }

    private nonisolated static func defaultPort(_ scheme: String?) -> Int? {
        switch scheme?.lowercased() {
        case "http": 80
        case "https": 443
        default: nil
        }
    }
}
