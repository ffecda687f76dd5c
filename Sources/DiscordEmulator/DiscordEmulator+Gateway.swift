import CompressNIO
import Foundation
import HummingbirdWebSocket
import NIOCore
import NIOFoundationCompat
import NIOWebSocket

extension DiscordEmulator {
    /// One gateway WebSocket: a writer draining the connection's frames and a reader handing
    /// client payloads to the world. Ends when either side closes.
    static func serveGateway(
        world: DiscordWorld, channel: any Channel, inbound: WebSocketInboundStream,
        outbound: WebSocketOutboundWriter, onResumeURL: Bool, version: String?, compress: String? = nil
    ) async throws {
        guard version == nil || version == "10" else {
            try await outbound.close(.unknown(4012), reason: "Invalid API version.")
            return
        }
        // Transport compression, as Discord offers it: one zlib stream for the connection, each
        // payload a binary frame ending in a sync flush (00 00 ff ff).
        guard compress == nil || compress == "zlib-stream" else {
            try await outbound.close(.unknown(4000), reason: "Unknown compression.")
            return
        }
        let (id, frames) = world.openGatewayConnection(onResumeURL: onResumeURL, compressed: compress != nil)
        defer { world.closeGatewayConnection(id) }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                let deflater = try compress.map { _ in try ZlibStreamDeflater() }
                for await frame in frames {
                    switch frame {
                    case .payload(let payload):
                        if let deflater {
                            try await outbound.write(.binary(try deflater.deflate(payload.encoded())))
                        } else {
                            try await outbound.write(.text(String(decoding: payload.encoded(), as: UTF8.self)))
                        }
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

/// One connection's `zlib-stream`: a zlib context kept for the connection's life, flushed
/// (Z_SYNC_FLUSH) after each payload so the client can inflate it at once.
final class ZlibStreamDeflater {
    private let compressor: ZlibCompressor

    init() throws {
        compressor = try ZlibCompressor(algorithm: .zlib)
    }

    func deflate(_ data: Data) throws -> ByteBuffer {
        var input = ByteBuffer(data: data)
        var output = ByteBufferAllocator().buffer(capacity: compressor.maxSize(from: input))
        try compressor.deflate(from: &input, to: &output, flush: .sync)
        return output
    }
}
