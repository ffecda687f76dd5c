import CZstd

/// A zstd failure, named as libzstd names it.
public struct ZstdError: Error, CustomStringConvertible, Sendable {
    public let description: String

    init(_ what: String) { description = what }

    /// nil when `result` is not one of libzstd's error codes.
    init?(result: Int) {
        guard ZSTD_isError(result) != 0 else { return nil }
        description = String(cString: ZSTD_getErrorName(result))
    }
}

/// Bytes produced into a growing array, `step` at a time (what libzstd writes into).
private struct Output {
    var bytes: [UInt8]
    var count = 0

    init(capacity: Int) { bytes = [UInt8](repeating: 0, count: max(64, capacity)) }

    /// Runs `body` on the free room (at least `minimum` bytes); it returns how much it filled.
    mutating func produce(minimum: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) -> (written: Int, filled: Bool) {
        if bytes.count - count < minimum { bytes.append(contentsOf: repeatElement(0, count: max(minimum, bytes.count))) }
        let start = count
        let room = bytes.count - start
        let written = bytes.withUnsafeMutableBytes { body(UnsafeMutableRawBufferPointer(rebasing: $0[start...])) }
        count += written
        return (written, written == room)
    }

    consuming func finish() -> [UInt8] {
        bytes.removeLast(bytes.count - count)
        return bytes
    }
}

/// Discord's `zstd-stream` transport compression, sending side: one zstd context for the
/// connection's life; each payload is flushed (`ZSTD_e_flush`) into one WebSocket message, and the
/// frame is never ended, so later payloads lean on what earlier ones taught the stream.
public final class ZstdStreamCompressor {
    private let context: OpaquePointer

    public init(level: Int32 = 3) throws(ZstdError) {
        guard let context = ZSTD_createCCtx() else { throw ZstdError("out of memory for a zstd compression context") }
        self.context = context
        if let error = ZstdError(result: ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level)) {
            ZSTD_freeCCtx(context)
            throw error
        }
    }

    deinit { ZSTD_freeCCtx(context) }

    /// `payload` compressed and flushed: the bytes of one WebSocket message.
    public func compress(_ payload: UnsafeRawBufferPointer) throws(ZstdError) -> [UInt8] {
        var output = Output(capacity: ZSTD_compressBound(payload.count) + 64)
        var source = ZSTD_inBuffer(src: payload.baseAddress, size: payload.count, pos: 0)
        while true {
            var result = 0
            _ = output.produce(minimum: 256) { room in
                var destination = ZSTD_outBuffer(dst: room.baseAddress, size: room.count, pos: 0)
                result = ZSTD_compressStream2(context, &destination, &source, ZSTD_e_flush)
                return destination.pos
            }
            if let error = ZstdError(result: result) { throw error }
            // 0: everything given is in the output, flushed.
            if result == 0 { return output.finish() }
        }
    }
}

/// Discord's `zstd-stream`, receiving side: one decompression context for the connection's life;
/// each WebSocket message is one whole gateway payload (the zstd frame goes on across messages).
/// Windows up to libzstd's default cap (128 MiB) are accepted.
public final class ZstdStreamDecompressor {
    private let context: OpaquePointer
    private let maxMessageSize: Int

    /// A payload larger than `maxMessageSize`: the connection should end.
    public struct TooLarge: Error {}

    public init(maxMessageSize: Int) throws(ZstdError) {
        guard let context = ZSTD_createDCtx() else { throw ZstdError("out of memory for a zstd decompression context") }
        self.context = context
        self.maxMessageSize = maxMessageSize
    }

    deinit { ZSTD_freeDCtx(context) }

    /// The payload `message` carries. A damaged stream throws, and the context is of no use after.
    public func decompress(_ message: UnsafeRawBufferPointer) throws -> [UInt8] {
        // Nothing to read (libzstd counts calls without progress, and refuses after a few).
        if message.isEmpty { return [] }
        var output = Output(capacity: min(maxMessageSize, max(4096, message.count * 8)))
        var source = ZSTD_inBuffer(src: message.baseAddress, size: message.count, pos: 0)
        while true {
            var result = 0
            let read = source.pos
            let (written, filled) = output.produce(minimum: 4096) { room in
                var destination = ZSTD_outBuffer(dst: room.baseAddress, size: room.count, pos: 0)
                result = ZSTD_decompressStream(context, &destination, &source)
                return destination.pos
            }
            if let error = ZstdError(result: result) { throw error }
            guard output.count <= maxMessageSize else { throw TooLarge() }
            // All input read and room left over: everything the message flushed is out.
            if source.pos == source.size && !filled { return output.finish() }
            // libzstd always moves on or fails; should it not, stop rather than spin.
            if written == 0 && source.pos == read { throw ZstdError("the stream made no progress") }
        }
    }
}
