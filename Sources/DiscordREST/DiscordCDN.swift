import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Discord's CDN, where attachment bytes live behind signed URLs that expire (`ex`, `is`, `hm`).
/// Only Discord's attachment hosts (and the API's own host, which is where the emulator serves
/// them) are ever fetched, so a URL from anywhere else cannot make the server call it.
public struct DiscordCDN: Sendable {
    public static let discordHosts: Set<String> = ["cdn.discordapp.com", "media.discordapp.net"]
    /// The client downloads go through, made when the first one starts.
    let httpClient: @Sendable () -> HTTPClient
    let allowedHosts: Set<String>

    /// A client for downloads; its owner shuts it down. It follows no redirect: an answer that
    /// points elsewhere would make the server fetch (and hand the app) whatever is there, past
    /// `isAllowed`. It decodes nothing, so it asks for `identity` only: the proxy relays the
    /// CDN's length and ranges, which must be of the bytes as they are. (`HTTPClient.shared`
    /// does both.)
    public static func makeClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// - Parameters:
    ///   - apiBaseURL: Discord's API (its host serves attachments too when it is not Discord's: the emulator).
    ///   - httpClient: A client from `makeClient()`, owned (and shut down) by the caller, who
    ///     may make it on first use.
    public init(apiBaseURL: String, httpClient: @escaping @Sendable () -> HTTPClient) {
        self.httpClient = httpClient
        var hosts = Self.discordHosts
        if let host = URLComponents(string: apiBaseURL)?.host?.lowercased(), !host.hasSuffix("discord.com") { hosts.insert(host) }
        self.allowedHosts = hosts
    }

    /// Whether `url` is an attachment URL of Discord's (or the emulator's) CDN.
    public func isAllowed(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), let host = components.host?.lowercased(),
            components.scheme == "https" || (components.scheme == "http" && !Self.discordHosts.contains(host))
        else { return false }
        return allowedHosts.contains(host) && components.path.hasPrefix("/attachments/")
    }

    /// When a signed URL stops working (its `ex` parameter, hexadecimal Unix seconds); nil when unsigned.
    public static func expiry(of url: String) -> Date? {
        guard let value = URLComponents(string: url)?.queryItems?.first(where: { $0.name == "ex" })?.value,
            let seconds = UInt64(value, radix: 16)
        else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    public enum Failure: Error, Sendable {
        case notAllowed
    }

    /// Starts a download; the caller streams the body and must consume or drop it.
    public func fetch(_ url: String, range: String?, timeout: Duration) async throws -> HTTPClientResponse {
        guard isAllowed(url) else { throw Failure.notAllowed }
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        request.headers.add(name: "Accept-Encoding", value: "identity")
        if let range { request.headers.add(name: "Range", value: range) }
        return try await httpClient().execute(request, timeout: .nanoseconds(Int64(timeout / .nanoseconds(1))))
    }
}
