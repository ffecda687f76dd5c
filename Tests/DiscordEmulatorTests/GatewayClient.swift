import DiscordEmulator
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore

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
