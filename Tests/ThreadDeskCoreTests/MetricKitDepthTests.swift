import DiscordREST
import Foundation
import Testing
import ThreadDeskCore

/// The cut of a stack overflow's deepest frames, before the payload is read.
@Suite("MetricKit payloads: deep stacks")
struct MetricKitDepthTests {
    @Test func aShallowDocumentIsLeftByteForByte() {
        let text = #"{"a":[1,{"b":"[[[{{ \" ]]"}],"c":{"d":[[]]}}"#
        #expect(MetricKitPayload.cuttingDeepStacks(Data(text.utf8)) == Data(text.utf8))
    }

    @Test func arraysDeeperThanTheLimitBecomeEmptyAndTheRestReads() throws {
        let deep = String(repeating: #"{"s":["#, count: 5000) + #""x""# + String(repeating: "]}", count: 5000)
        let cut = MetricKitPayload.cuttingDeepStacks(Data(deep.utf8), depth: 20)
        let shape = JSON.shape(of: cut)
        #expect(shape.depth <= 22)
        let parsed = try JSON.parse(cut)
        var node = parsed
        var levels = 0
        while let next = node["s"]?[0] {
            node = next
            levels += 1
        }
        #expect(levels == 10 && node["s"]?.arrayValue?.isEmpty == true)
    }

    @Test func bracketsInsideStringsAreNotCounted() throws {
        let text = #"{"a":["]]]]\"[[[[",["x"]]}"#
        #expect(try JSON.parse(MetricKitPayload.cuttingDeepStacks(Data(text.utf8), depth: 2))["a"]?[0]?.stringValue == #"]]]]"[[[["#)
    }

    @Test func aStackOverflowsPayloadIsReadWithItsTopFrames() throws {
        let frame = #"{"binaryName":"MyShop","binaryUUID":"11111111-2222-3333-4444-555555555555","offsetIntoBinaryTextSegment":16"#
        let count = 4000
        let chain = Array(repeating: frame + #","subFrames":["#, count: count - 1).joined() + frame + "}" + String(repeating: "]}", count: count - 1)
        let text = #"{"crashDiagnostics":[{"diagnosticMetaData":{"signal":11},"callStackTree":{"callStacks":[{"threadAttributed":true,"callStackRootFrames":["#
            + chain + "]}]}}]}"
        let payload = try MetricKitPayload(json: MetricKitPayload.cuttingDeepStacks(Data(text.utf8)))
        let frames = try #require(payload.diagnostics.first?.threads.first?.frames)
        #expect(frames.count > 100 && frames.count < count && frames.allSatisfy { $0.binaryName == "MyShop" })
    }
}
