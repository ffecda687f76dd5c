import Foundation

extension MetricKitPayload {
    /// How deep a payload may nest once its deepest stacks are cut: within the JSON reader's 512.
    public static let maxNesting = 320

    /// The payload with every array that opens at `depth` or deeper replaced by `[]` (and an object
    /// deeper still by `{}`): it nests at most `depth + 2` levels (an emptied array counts one). A crash's
    /// frames nest two levels each (`subFrames: [{…}]`), so a stack overflow's thousands of frames
    /// nest far past what any JSON reader takes: cut there, the payload keeps its top ~240 frames
    /// of each stack, ~150 (what a note and a signature read) and stays readable. One pass, no
    /// recursion; strings (and brackets inside them) are copied as they are. Input that is not
    /// JSON stays not JSON: the reader refuses it after.
    public static func cuttingDeepStacks(_ data: Data, depth limit: Int = maxNesting) -> Data {
        var output = [UInt8]()
        output.reserveCapacity(data.count)
        var depth = 0
        var inString = false
        var escaped = false
        // While > 0: inside a cut array, at that many brackets deep within it.
        var skipping = 0
        for byte in data {
            if inString {
                if skipping == 0 { output.append(byte) }
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                if skipping == 0 { output.append(byte) }
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                // Arrays are cut at the limit (`subFrames`: the frames below stay whole); an object
                // one deeper (only objects nested in objects get there) is cut too.
                if skipping > 0 {
                    skipping += 1
                } else if byte == UInt8(ascii: "[") ? depth >= limit : depth > limit {
                    skipping = 1
                    output.append(contentsOf: byte == UInt8(ascii: "[") ? [UInt8(ascii: "["), UInt8(ascii: "]")] : [UInt8(ascii: "{"), UInt8(ascii: "}")])
                } else {
                    depth += 1
                    output.append(byte)
                }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if skipping > 0 {
                    skipping -= 1
                } else {
                    // A stray closer (no JSON: the reader refuses it) counts no level back.
                    depth = max(0, depth - 1)
                    output.append(byte)
                }
            default:
                if skipping == 0 { output.append(byte) }
            }
        }
        return Data(output)
    }
}
