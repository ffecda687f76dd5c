import CompressNIO
import NIOCore

/// Discord's `zlib-stream` transport compression, read side: one zlib context for the whole
/// connection; a payload is complete when the bytes so far end with a sync flush (00 00 ff ff),
/// and may span several frames.
final class ZlibStreamInflater {
    private let decompressor: ZlibDecompressor
    private var pending = ByteBufferAllocator().buffer(capacity: 1024)
    private let maxMessageSize: Int

    struct TooLarge: Error {}

    init(maxMessageSize: Int) throws {
        decompressor = try ZlibDecompressor(algorithm: .zlib)
        self.maxMessageSize = maxMessageSize
    }

    /// The payload the frames so far complete, or nil while it is still incomplete.
    func feed(_ frame: ByteBuffer) throws -> ByteBuffer? {
        pending.writeImmutableBuffer(frame)
        guard pending.readableBytes <= maxMessageSize else { throw TooLarge() }
        guard pending.readableBytes >= 4, pending.getBytes(at: pending.writerIndex - 4, length: 4) == [0, 0, 0xFF, 0xFF] else { return nil }
        defer { pending.clear() }
        var output = ByteBufferAllocator().buffer(capacity: max(4096, pending.readableBytes * 8))
        while true {
            do {
                try decompressor.inflate(from: &pending, to: &output)
                return output
            } catch let error as CompressNIOError where error == .bufferOverflow {
                // Out of room (what was read so far is kept): more room, and go on.
                guard output.capacity < maxMessageSize else { throw TooLarge() }
                output.reserveCapacity(minimumWritableBytes: output.capacity)
            } catch let error as CompressNIOError where error == .inputBufferOverflow {
                // All input read and nothing more to write: the payload is complete.
                return output
            }
        }
    }
}
