// Fuzz target: zstd-stream, the gateway's transport compression. The input's lines are payloads:
// compressed one by one on one stream and read back on another, each must come back as it was.
// The same lines are then fed to a fresh reader as if they were compressed messages (what a broken
// or hostile gateway could send): it may refuse them, but must not crash, spin or outgrow its cap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzZstd(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    let lines = input.split(separator: 0x0A, omittingEmptySubsequences: false).map { Array($0) }
    let cap = 1 << 16
    do {
        let writer = try ZstdStreamCompressor(level: 1)
        let reader = try ZstdStreamDecompressor(maxMessageSize: cap)
        for line in lines {
            let message = try line.withUnsafeBytes { try writer.compress($0) }
            let back = try message.withUnsafeBytes { try reader.decompress($0) }
            precondition(back == line, "a payload came back changed")
        }
    } catch {
        preconditionFailure("a round trip failed: \(error)")
    }
    guard let hostile = try? ZstdStreamDecompressor(maxMessageSize: cap) else { preconditionFailure("no context") }
    for line in lines {
        guard let payload = try? line.withUnsafeBytes({ try hostile.decompress($0) }) else { break }
        precondition(payload.count <= cap, "a payload beyond the cap")
    }
    return 0
}
