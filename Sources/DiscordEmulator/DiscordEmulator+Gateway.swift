import Foundation
import HummingbirdWebSocket
import NIOCore
import NIOWebSocket

extension DiscordEmulator {
    /// One gateway WebSocket: a writer draining the connection's frames and a reader handing
    /// client payloads to the world. Ends when either side closes.
    static func serveGateway(
        world: DiscordWorld, channel: any Channel, inbound: WebSocketInboundStream,
        outbound: WebSocketOutboundWriter, onResumeURL: Bool, version: String?
    ) async throws {
        guard version == nil || version == "10" else {
            try await outbound.close(.unknown(4012), reason: "Invalid API version.")
            return
        }
        let (id, frames) = world.openGatewayConnection(onResumeURL: onResumeURL)
        defer { world.closeGatewayConnection(id) }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await frame in frames {
                    switch frame {
                    case .payload(let payload):
                        try await outbound.write(.text(String(decoding: payload.encoded(), as: UTF8.self)))
                    case .close(let code, let reason):
                        try await outbound.close(.unknown(code), reason: reason)
                        return true
                    case .drop:
                        try? await channel.close()
                        return false
                    }
                }
                return false
            }
            group.addTask {
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    // Discord reads JSON payloads from text and binary frames alike (hikari sends binary).
                    switch message {
                    case .text(let text): world.receiveGatewayPayload(text, on: id)
                    case .binary(let buffer): world.receiveGatewayPayload(String(buffer: buffer), on: id)
                    }
                }
                return false
            }
            // After our close frame, give the client a moment to answer before tearing down.
            if try await group.next() == true {
                group.addTask {
                    try await Task.sleep(for: .seconds(2))
                    return false
                }
                _ = try await group.next()
            }
            group.cancelAll()
        }
    }
}
