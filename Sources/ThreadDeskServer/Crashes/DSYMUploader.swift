import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// `threaddesk admin dsyms upload`: a build's dSYMs sent from CI to a running server's
/// `POST /internal/dsyms`, so that every replica can read them and waiting reports are read again.
public enum DSYMUploader {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Sends `file` (a zip of `.dSYM` bundles, or a DWARF file) for `app`; returns the server's answer.
    /// - Parameters:
    ///   - server: The server's internal listener (`INTERNAL_PORT`), or its public one without one.
    ///   - secret: `DSYMS_SECRET`.
    ///   - timeout: The whole upload's deadline.
    public static func upload(
        _ file: URL, to server: URL, secret: String, app: String?, name: String?, timeout: Duration = .seconds(600)
    ) async throws -> String {
        let data = try Data(contentsOf: file)
        var components = URLComponents(url: server.appendingPathComponent("internal/dsyms"), resolvingAgainstBaseURL: false)
        let query = [("app", app), ("name", name ?? file.deletingPathExtension().lastPathComponent)].compactMap { key, value in
            value.map { URLQueryItem(name: key, value: $0) }
        }
        components?.queryItems = query.isEmpty ? nil : query
        guard let url = components?.url else { throw Failure(description: "not a server URL: \(server)") }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(secret)")
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.body = .bytes(ByteBuffer(data: data))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(Int64(timeout.components.seconds)))
        let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
        guard (200..<300).contains(response.status.code) else {
            throw Failure(description: "the server answered \(response.status.code): \(body)")
        }
        return body
    }
}
