import NIOCore
import ThreadDeskSettings
import ZstdStream

/// The transport compression the gateway connection asks Discord for (`compress=`). Either kind
/// is a fraction of the bytes for the small VM the daemon runs on: JSON compresses well, and the
/// stream keeps one dictionary for the connection's life.
public enum TransportCompression: String, Sendable, CaseIterable {
    case none
    case zlibStream = "zlib-stream"
    case zstdStream = "zstd-stream"

    /// The gateway URL's query parameter, with its leading `&`.
    var query: String { self == .none ? "" : "&compress=\(rawValue)" }

    /// The setting `GATEWAY_COMPRESSION` read from `value`; a malformed value is named in `problem`.
    public static func setting(_ value: String?, default fallback: Self = .zlibStream, problem: inout ConfigurationProblem) -> Self {
        guard let value else { return fallback }
        guard let parsed = Self(rawValue: value) else {
            problem.invalid.append("GATEWAY_COMPRESSION (zlib-stream, zstd-stream or none)")
            return fallback
        }
        return parsed
    }
}

/// One connection's reader of binary frames: the payload they complete, or nil while one is
/// still incomplete (zlib-stream payloads may span frames; a zstd-stream frame is one payload).
struct TransportDecoder {
    private enum Stream {
        case none
        case zlib(ZlibStreamInflater)
        case zstd(ZstdStreamDecompressor)
    }

    private let stream: Stream

    init(_ compression: TransportCompression, maxMessageSize: Int) throws {
        stream =
            switch compression {
            case .none: .none
            case .zlibStream: .zlib(try ZlibStreamInflater(maxMessageSize: maxMessageSize))
            case .zstdStream: .zstd(try ZstdStreamDecompressor(maxMessageSize: maxMessageSize))
            }
    }

    func decode(_ frame: ByteBuffer) throws -> ByteBuffer? {
        switch stream {
        case .none: frame
        case .zlib(let inflater): try inflater.feed(frame)
        case .zstd(let decompressor): ByteBuffer(bytes: try frame.withUnsafeReadableBytes { try decompressor.decompress($0) })
        }
    }
}
