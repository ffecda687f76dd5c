import Testing
import ZstdStream

@Suite("zstd-stream transport compression")
struct ZstdStreamTests {
    static func compress(_ text: String, _ writer: ZstdStreamCompressor) throws -> [UInt8] {
        try Array(text.utf8).withUnsafeBytes { try writer.compress($0) }
    }

    static func decompress(_ message: [UInt8], _ reader: ZstdStreamDecompressor) throws -> String {
        String(decoding: try message.withUnsafeBytes { try reader.decompress($0) }, as: UTF8.self)
    }

    /// One stream per connection: every message is read back whole, and a payload like an earlier
    /// one costs a fraction of the bytes, because the stream remembers what it has sent.
    @Test func payloadsOnOneStreamComeBackWholeAndRepeatsCostLittle() throws {
        let writer = try ZstdStreamCompressor()
        let reader = try ZstdStreamDecompressor(maxMessageSize: 1 << 20)
        let content = String(repeating: "The export button does nothing. ", count: 20)
        var sizes: [Int] = []
        for index in 0..<50 {
            let payload = "{\"op\":0,\"t\":\"MESSAGE_CREATE\",\"s\":\(index + 1),\"d\":{\"content\":\"\(content)\",\"channel_id\":\"1574737060231774208\"}}"
            let message = try Self.compress(payload, writer)
            sizes.append(message.count)
            #expect(try Self.decompress(message, reader) == payload)
        }
        #expect(sizes[1] * 4 < sizes[0], "\(sizes.prefix(3))")
    }

    /// Found by the fuzzer: empty messages in a row made libzstd refuse the stream ("no
    /// progress"); an empty message is an empty payload, and the stream goes on.
    /// The fuzzer's input: "1" and then 16 empty lines, at level 1.
    @Test func emptyMessagesLeaveTheStreamUsable() throws {
        let writer = try ZstdStreamCompressor(level: 1)
        let reader = try ZstdStreamDecompressor(maxMessageSize: 1 << 20)
        #expect(try Self.decompress(try Self.compress("1", writer), reader) == "1")
        for _ in 0..<20 {
            let message = try Self.compress("", writer)
            #expect(message.isEmpty)
            #expect(try Self.decompress(message, reader) == "")
        }
        #expect(try Self.decompress(try Self.compress(#"{"op":11}"#, writer), reader) == #"{"op":11}"#)
    }

    @Test func aPayloadBeyondTheCapIsRefused() throws {
        let writer = try ZstdStreamCompressor()
        let reader = try ZstdStreamDecompressor(maxMessageSize: 10_000)
        let message = try Self.compress(String(repeating: "x", count: 100_000), writer)
        #expect(message.count < 1_000)
        #expect(throws: ZstdStreamDecompressor.TooLarge.self) { try message.withUnsafeBytes { try reader.decompress($0) } }
    }

    @Test func bytesThatAreNotAZstdStreamAreRefused() throws {
        let reader = try ZstdStreamDecompressor(maxMessageSize: 1 << 20)
        let notZstd = Array(#"{"op":10,"d":{"heartbeat_interval":41250}}"#.utf8)
        #expect(throws: ZstdError.self) { try notZstd.withUnsafeBytes { try reader.decompress($0) } }
    }
}
