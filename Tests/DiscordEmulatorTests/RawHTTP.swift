import AsyncHTTPClient
import DiscordEmulator
import DiscordREST
import Foundation
import NIOCore
import NIOHTTP1

/// Raw HTTP against the emulator's REST API, as any Discord client sends it: what we check is the
/// wire (status, Discord's JSON), not the emulator's internals.
struct RawHTTP: Sendable {
    let endpoints: DiscordEmulator.Endpoints

    enum Method: String, Sendable { case GET, POST, PUT, PATCH, DELETE }

    struct Answer: Sendable {
        var status: Int
        var json: JSON?
        /// Discord's JSON error code, when the answer is one.
        var code: Int? { json?["code"]?.intValue }
    }

    /// `path` under `/api/v10`; `body` as raw JSON text, so numbers can be sent as numbers of any
    /// size; with the bot's token unless `bot` is false.
    func call(_ method: Method, _ path: String, body: String? = nil, bot: Bool = true) async throws -> Answer {
        try await send(method, endpoints.restURL + path, body: body, bot: bot)
    }

    func call(_ method: Method, _ path: String, json: JSON, bot: Bool = true) async throws -> Answer {
        try await call(method, path, body: String(decoding: json.encoded(), as: UTF8.self), bot: bot)
    }

    private func send(_ method: Method, _ url: String, body: String?, bot: Bool) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = HTTPMethod(rawValue: method.rawValue)
        if bot { request.headers.add(name: "Authorization", value: "Bot \(endpoints.botToken)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 24)
        // Not `cond ? nil : …`: JSON takes a nil literal, which would make an empty body `.null`.
        let json: JSON? = bytes.readableBytes == 0 ? Optional.none : try JSON.parse(Data(bytes.readableBytesView))
        return Answer(status: Int(response.status.code), json: json)
    }
}
