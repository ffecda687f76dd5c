import CompressNIO
import Foundation
import HummingbirdWebSocket
import NIOCore
import NIOFoundationCompat
import NIOWebSocket
import Synchronization
import ZstdStream

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
        // Transport compression, as Discord offers it: one compression stream for the connection,
        // each payload one binary frame (zlib: ending in a sync flush, 00 00 ff ff).
        guard let compression = GatewayCompression(query: compress) else {
            try await outbound.close(.unknown(4000), reason: "Unknown compression.")
            return
        }
        let (id, frames) = world.openGatewayConnection(onResumeURL: onResumeURL, compression: compression)
        let clientClose = await ClientCloseCode.watch(channel)
        defer { world.closeGatewayConnection(id, clientCloseCode: clientClose?.value.withLock { $0 }) }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                let encode = try compression.encoder()
                for await frame in frames {
                    switch frame {
                    case .payload(let payload):
                        let message = try encode(payload.encoded())
                        world.state.withLock { $0.counters.gatewayBytesSent[compression.name, default: 0] += message.byteCount }
                        try await outbound.write(message)
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

/// The `compress` a gateway client asked for.
enum GatewayCompression {
    case none, zlibStream, zstdStream

    /// nil for a value Discord does not offer.
    init?(query: String?) {
        switch query {
        case nil: self = .none
        case "zlib-stream": self = .zlibStream
        case "zstd-stream": self = .zstdStream
        default: return nil
        }
    }

    /// As the `compress` query names it (`none` when there is none).
    var name: String {
        switch self {
        case .none: "none"
        case .zlibStream: "zlib-stream"
        case .zstdStream: "zstd-stream"
        }
    }

    /// One connection's payload encoder (with its compression context, when there is one).
    func encoder() throws -> (Data) throws -> WebSocketOutboundWriter.OutboundFrame {
        switch self {
        case .none:
            return { .text(String(decoding: $0, as: UTF8.self)) }
        case .zlibStream:
            let deflater = try ZlibStreamDeflater()
            return { .binary(try deflater.deflate($0)) }
        case .zstdStream:
            let compressor = try ZstdStreamCompressor()
            return { payload in .binary(ByteBuffer(bytes: try payload.withUnsafeBytes { try compressor.compress($0) })) }
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

/// The code of the close frame a client sent, read beside the WebSocket library (which keeps it
/// to itself): Discord ends the session, no resume, when a client closes with 1000 or 1001.
final class ClientCloseCode: Sendable {
    let value = Mutex<UInt16?>(nil)

    /// Starts watching the frames `channel` decodes; nil when its pipeline has no WebSocket decoder.
    static func watch(_ channel: any Channel) async -> ClientCloseCode? {
        let code = ClientCloseCode()
        // Added on the connection's event loop, right after the frame decoder, before HELLO goes
        // out (the client sends nothing before it, so no frame is missed).
        let added = channel.eventLoop.submit {
            let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<WebSocketFrameDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(Sniffer(code: code), position: .after(decoder))
        }
        do {
            try await added.get()
        } catch {
            return nil
        }
        return code
    }

    private final class Sniffer: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = WebSocketFrame
        typealias InboundOut = WebSocketFrame
        let code: ClientCloseCode

        init(code: ClientCloseCode) { self.code = code }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            if frame.opcode == .connectionClose {
                var payload = frame.unmaskedData
                // The client's own close frame is the first; one that follows (the library
                // answering ours) does not change what the client chose.
                if let raw = payload.readInteger(as: UInt16.self) { code.value.withLock { $0 = $0 ?? raw } }
            }
            context.fireChannelRead(data)
        }
    }
}

extension WebSocketOutboundWriter.OutboundFrame {
    /// The bytes the frame carries (its payload, not the WebSocket header).
    var byteCount: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .binary(let buffer): buffer.readableBytes
        default: 0
        }
    }
}
