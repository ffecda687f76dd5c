import Foundation
import NIOCore
import NIOFoundationCompat

/// `multipart/form-data` as Discord takes uploads: `payload_json`, then `files[n]`. The body is a
/// list of buffers (headers between the files' own bytes), sent one after another: a file is
/// never copied into a second, bigger buffer.
struct MultipartEncoder {
    let boundary = "threaddesk-" + UUID().uuidString
    let chunks: [ByteBuffer]

    var contentType: String { "multipart/form-data; boundary=\(boundary)" }
    var length: Int { chunks.reduce(0) { $0 + $1.readableBytes } }

    init(payloadJSON: Data, files: [DiscordFile]) {
        var chunks: [ByteBuffer] = []
        var text = ""
        func line(_ value: String) { text += value + "\r\n" }
        line("--\(boundary)")
        line("Content-Disposition: form-data; name=\"payload_json\"")
        line("Content-Type: application/json")
        line("")
        chunks.append(ByteBuffer(string: text))
        chunks.append(ByteBuffer(data: payloadJSON))
        text = "\r\n"
        for (index, file) in files.enumerated() {
            let filename = String(file.filename.unicodeScalars.filter { $0 != "\"" && $0 != "\r" && $0 != "\n" && $0 != "\\" }.map(Character.init))
            line("--\(boundary)")
            line("Content-Disposition: form-data; name=\"files[\(index)]\"; filename=\"\(filename)\"")
            line("Content-Type: \(file.contentType)")
            line("")
            chunks.append(ByteBuffer(string: text))
            chunks.append(file.bytes)
            text = "\r\n"
        }
        line("--\(boundary)--")
        chunks.append(ByteBuffer(string: text))
        self.chunks = chunks
    }

    /// All of it in one buffer: for tests and records, not for sending.
    var body: Data {
        var data = Data()
        for chunk in chunks { data.append(contentsOf: chunk.readableBytesView) }
        return data
    }
}

/// The chunks of a body as an async sequence AsyncHTTPClient can send; each iteration starts again
/// from the first chunk, so a retried request sends the whole body again.
struct BufferSequence: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let chunks: [ByteBuffer]

    struct AsyncIterator: AsyncIteratorProtocol {
        var remaining: ArraySlice<ByteBuffer>
        mutating func next() async -> ByteBuffer? { remaining.popFirst() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(remaining: chunks[...]) }
}
