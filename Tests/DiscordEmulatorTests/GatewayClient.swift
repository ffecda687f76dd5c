import DiscordEmulator
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import NIOPosix
import NIOWebSocket

/// A raw gateway client for tests: a script reads payloads and writes payloads over a real
/// WebSocket, so what we check is the wire protocol, not the emulator's internals.
struct GatewayScript: ~Copyable {
    private var messages: WebSocketInboundMessageStream.AsyncIterator
    private let outbound: WebSocketOutboundWriter

    init(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) {
        self.messages = inbound.messages(maxSize: 1 << 22).makeAsyncIterator()
        self.outbound = outbound
    }

    /// The next payload, or nil once the emulator has closed the connection.
    mutating func receive() async throws -> JSON? {
        guard let message = try await messages.next() else { return nil }
        switch message {
        case .text(let text): return try JSONDecoder().decode(JSON.self, from: Data(text.utf8))
        case .binary(let buffer): return try JSONDecoder().decode(JSON.self, from: Data(buffer.readableBytesView))
        }
    }

    /// Skips heartbeat ACKs and other dispatches until the dispatch named `type`.
    mutating func dispatch(_ type: String) async throws -> JSON {
        while let payload = try await receive() {
            if payload["t"]?.stringValue == type { return payload }
        }
        throw GatewayScriptError.closedBefore(type)
    }

    /// Reads until the emulator closes the connection.
    mutating func drain() async throws {
        while try await receive() != nil {}
    }

    /// Closes the connection with `code`, as a client does.
    func close(_ code: WebSocketErrorCode) async throws {
        try await outbound.close(code, reason: nil)
    }

    func send(_ payload: JSON) async throws {
        let data = try JSONEncoder().encode(payload)
        try await outbound.write(.text(String(decoding: data, as: UTF8.self)))
    }

    func identify(token: String, intents: Int = GatewayScript.supportIntents) async throws {
        try await send([
            "op": 2,
            "d": [
                "token": .string(token), "intents": JSON(intents),
                "properties": ["os": "linux", "browser": "threaddesk-tests", "device": "threaddesk-tests"],
            ],
        ])
    }

    /// GUILDS | GUILD_MESSAGES | MESSAGE_CONTENT: what ThreadDesk's gateway asks for.
    static let supportIntents = 1 | 1 << 9 | 1 << 15
}

enum GatewayScriptError: Error {
    case closedBefore(String)
}

/// Connects to `url` (adding `?v=10&encoding=json`), runs `script`, and returns how the
/// connection was closed.
@discardableResult
func withGateway(
    _ url: String, query: String = "v=10&encoding=json",
    _ script: @escaping @Sendable (inout GatewayScript) async throws -> Void
) async throws -> WebSocketCloseFrame? {
    var logger = Logger(label: "gateway-test")
    logger.logLevel = .error
    return try await WebSocketClient.connect(url: "\(url)?\(query)", logger: logger) { inbound, outbound, _ in
        var gateway = GatewayScript(inbound: inbound, outbound: outbound)
        try await script(&gateway)
    }
}

/// What a gateway that closes at once sends, read off a plain TCP connection: the status line of
/// the upgrade and the code of the close frame after it. (The WebSocket client library can miss
/// a close frame that arrives together with the upgrade answer and then waits forever, so the
/// frame is parsed here by hand.)
func immediateGatewayClose(_ url: String, query: String, within timeout: Duration = .seconds(10)) async throws -> (status: String, code: UInt16?) {
    guard let components = URLComponents(string: url), let host = components.host, let port = components.port else {
        throw GatewayScriptError.closedBefore("a valid gateway URL")
    }
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: host, port: port) { channel in
        channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
    }
    let path = components.path.isEmpty ? "/" : components.path
    let request = "GET \(path)?\(query) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    // The deadline: the connection is closed, which ends the read below without a close code.
    let deadline = channel.channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(timeout / .nanoseconds(1)))) {
        channel.channel.close(promise: nil)
    }
    defer { deadline.cancel() }
    let received: (ByteBuffer, UInt16?) = try await channel.executeThenClose { inbound, outbound in
        try await outbound.write(ByteBuffer(string: request))
        var all = ByteBuffer()
        for try await var chunk in inbound {
            all.writeBuffer(&chunk)
            if let close = parseClose(all) { return (all, close as UInt16?) }
        }
        return (all, nil as UInt16?)
    }
    let text = String(buffer: received.0)
    return (String(text.prefix { $0 != "\r" }), received.1)
}

/// The code of the first close frame after the HTTP head in `bytes`, once it has all arrived.
private func parseClose(_ bytes: ByteBuffer) -> UInt16? {
    let all = Array(bytes.readableBytesView)
    guard let end = all.indices.dropLast(3).first(where: { all[$0...$0 + 3] == [13, 10, 13, 10] }) else { return nil }
    let frame = all[(end + 4)...]
    guard frame.count >= 4, let first = frame.first, first & 0x0F == 0x8 else { return nil }
    let start = frame.startIndex
    return UInt16(frame[start + 2]) << 8 | UInt16(frame[start + 3])
}
