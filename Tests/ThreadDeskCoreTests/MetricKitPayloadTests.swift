import Foundation
import Testing
import TestSupport
import ThreadDeskCore

@Suite("MetricKit payloads")
struct MetricKitPayloadTests {
    static let uuid = MachOFixture.defaultUUID

    @Test func readsACrashAsTheDeviceWritesIt() throws {
        let data = MachOFixture.crashPayload(uuid: Self.uuid.lowercased(), offsets: [0x18, 0x7C], mainOffset: 0xD0)
        let payload = try MetricKitPayload(json: data)
        #expect(payload.diagnostics.count == 1)
        #expect(payload.timeStampBegin == "2024-01-15 10:00:00")
        let crash = try #require(payload.diagnostics.first)
        #expect(crash.kind == .crash)
        #expect(crash.appVersion == "4.2" && crash.appBuild == "420")
        #expect(crash.osVersion == "iPhone OS 17.2 (21C62)" && crash.deviceType == "iPhone15,2")
        #expect(crash.architecture == "arm64e" && crash.bundleID == "com.example.MyShop")
        #expect(crash.exceptionType == 1 && crash.exceptionCode == 0 && crash.signal == 11)
        #expect(crash.exceptionName == "EXC_BAD_ACCESS" && crash.signalName == "SIGSEGV")
        #expect(crash.terminationReason == "Namespace SIGNAL, Code 11 Segmentation fault: 11")
        #expect(crash.threads.count == 2)
        // The attributed thread first, though the report lists it second.
        let crashed = crash.threads[0]
        #expect(crashed.attributed && !crash.threads[1].attributed)
        #expect(crashed.frames.map(\.binaryName) == ["MyShop", "MyShop", "libswiftCore.dylib", "UIKitCore", "UIKitCore", "MyShop", "dyld"])
        #expect(crashed.frames[0] == CrashFrame(binaryName: "MyShop", binaryUUID: Self.uuid, offset: 0x18, address: 0x1_0400_0018))
        #expect(crashed.frames[1].offset == 0x7C)
        #expect(crash.threads[1].frames.count == 2)
    }

    @Test func readsAHang() throws {
        let payload = try MetricKitPayload(json: MachOFixture.hangPayload(uuid: Self.uuid, offsets: [0x40], duration: "3.5 sec"))
        let hang = try #require(payload.diagnostics.first)
        #expect(hang.kind == .hang && hang.hangDuration == "3.5 sec")
        #expect(hang.exceptionName == nil && hang.signalName == nil)
        #expect(hang.threads[0].frames.first?.offset == 0x40)
    }

    @Test func leavesOtherDiagnosticsOutAndKeepsCrashesBeforeHangs() throws {
        let json = #"""
            {"cpuExceptionDiagnostics":[{"diagnosticMetaData":{"appVersion":"1"}}],
             "diskWriteExceptionDiagnostics":[{}], "appLaunchDiagnostics":[{}],
             "hangDiagnostics":[{"diagnosticMetaData":{"hangDuration":2}}],
             "crashDiagnostics":[{"diagnosticMetaData":{"exceptionType":10,"signal":6}}]}
            """#
        let payload = try MetricKitPayload(json: Data(json.utf8))
        #expect(payload.diagnostics.map(\.kind) == [.crash, .hang])
        #expect(payload.diagnostics[0].exceptionName == "EXC_CRASH" && payload.diagnostics[0].signalName == "SIGABRT")
        #expect(payload.diagnostics[0].threads.isEmpty)
        #expect(payload.diagnostics[1].hangDuration == "2")
    }

    @Test(arguments: [
        ("", "not JSON"),
        (#"{"crashDiagnostics":[{"#, "not JSON"),
        ("[1,2]", "not a JSON object"),
        ("{}", "no crash or hang"),
        (#"{"crashDiagnostics":[]}"#, "no crash or hang"),
        (#"{"crashDiagnostics":{}}"#, "`crashDiagnostics` is not an array"),
        (#"{"crashDiagnostics":[7]}"#, "`crashDiagnostics[0]` is not an object"),
        (#"{"crashDiagnostics":[{"diagnosticMetaData":{"appVersion":4.2}}]}"#, "`crashDiagnostics[0].diagnosticMetaData.appVersion` is not a string"),
        (#"{"crashDiagnostics":[{"diagnosticMetaData":{"signal":"11"}}]}"#, "`crashDiagnostics[0].diagnosticMetaData.signal` is not a number"),
        (#"{"crashDiagnostics":[{"diagnosticMetaData":{"signal":1.5}}]}"#, "not a whole number"),
        (#"{"crashDiagnostics":[{"callStackTree":{"callStacks":[{"threadAttributed":"yes"}]}}]}"#, "threadAttributed` is not true or false"),
        (#"{"crashDiagnostics":[{"callStackTree":{"callStacks":[{"callStackRootFrames":[{"offsetIntoBinaryTextSegment":"0x10"}]}]}}]}"#,
         "`crashDiagnostics[0].callStackTree.callStacks[0].callStackRootFrames[0].offsetIntoBinaryTextSegment` is not a number"),
        (#"{"crashDiagnostics":[{"callStackTree":{"callStacks":[{"callStackRootFrames":[{"offsetIntoBinaryTextSegment":-4}]}]}}]}"#, "is negative"),
        (#"{"crashDiagnostics":[{"callStackTree":{"callStacks":[{"callStackRootFrames":[{"binaryName":"A"}]}]}}]}"#, "has no `offsetIntoBinaryTextSegment`"),
        (#"{"crashDiagnostics":[{"callStackTree":{"callStacks":[{"callStackRootFrames":[{"offsetIntoBinaryTextSegment":1,"subFrames":{}}]}]}}]}"#, "subFrames` is not an array"),
        (#"{"crashDiagnostics":[{"callStackTree":{"callStacks":[{"callStackRootFrames":[{"offsetIntoBinaryTextSegment":1,"subFrames":[{"offsetIntoBinaryTextSegment":2,"subFrames":[{"offsetIntoBinaryTextSegment":true}]}]}]}]}}]}"#,
         "callStackRootFrames[0] (frame 2).offsetIntoBinaryTextSegment` is not a number"),
    ])
    func refusesWithASentenceNamingWhatIsWrong(json: String, reason: String) {
        #expect {
            try MetricKitPayload(json: Data(json.utf8))
        } throws: { error in
            (error as? CrashPayloadError)?.reason.contains(reason) == true
        }
    }

    @Test func keepsFramesWhoseUUIDIsNotOneWithoutIt() throws {
        let json = #"""
            {"crashDiagnostics":[{"callStackTree":{"callStacks":[{"threadAttributed":true,"callStackRootFrames":[
              {"binaryName":"A","binaryUUID":"not-a-uuid","offsetIntoBinaryTextSegment":16,"subFrames":[
              {"binaryName":"B","binaryUUID":"6c2f7d3e9a414b1c8e550d3a2b1c4f60","offsetIntoBinaryTextSegment":32,"subFrames":[
              {"binaryName":"C","binaryUUID":"6C2F7D3E-9A414B1C-8E55-0D3A2B1C4F60","offsetIntoBinaryTextSegment":48}]}]}]}]}}]}
            """#
        let frames = try MetricKitPayload(json: Data(json.utf8)).diagnostics[0].threads[0].frames
        #expect(frames.map(\.binaryUUID) == [nil, Self.uuid, nil])
        #expect(frames.map(\.offset) == [16, 32, 48])
    }

    @Test func cutsTextsShortAndTakesControlCharactersOut() throws {
        let long = String(repeating: "é", count: 500)
        let json = #"{"crashDiagnostics":[{"diagnosticMetaData":{"appVersion":"4.2\u0000\u001b[31m","deviceType":"\#(long)","terminationReason":"a\nb"}}]}"#
        let crash = try MetricKitPayload(json: Data(json.utf8)).diagnostics[0]
        #expect(crash.appVersion == "4.2[31m")
        #expect(crash.deviceType?.count == MetricKitPayload.maxText)
        #expect(crash.terminationReason == "a b")
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        let depth = 10_000
        let json = String(repeating: #"{"a":["#, count: depth) + String(repeating: "]}", count: depth)
        #expect(throws: CrashPayloadError.self) { try MetricKitPayload(json: Data(json.utf8)) }
        let frames = #"{"crashDiagnostics":[{"callStackTree":{"callStacks":[{"callStackRootFrames":["#
            + String(repeating: #"{"offsetIntoBinaryTextSegment":1,"subFrames":["#, count: depth)
            + String(repeating: "]}", count: depth) + "]}]}}]}"
        #expect(throws: CrashPayloadError.self) { try MetricKitPayload(json: Data(frames.utf8)) }
    }

    @Test func aDeepChainOfFramesIsWalkedNotRecursed() throws {
        // As deep as the JSON reader takes (512 levels): each frame two levels down.
        let depth = 240
        let json = #"{"crashDiagnostics":[{"callStackTree":{"callStacks":[{"callStackRootFrames":["#
            + (0..<depth).map { #"{"offsetIntoBinaryTextSegment":\#($0),"subFrames":["# }.joined()
            + String(repeating: "]}", count: depth) + "]}]}}]}"
        let frames = try MetricKitPayload(json: Data(json.utf8)).diagnostics[0].threads[0].frames
        #expect(frames.count == depth)
        #expect(frames.last?.offset == UInt64(depth - 1))
    }

    @Test func twoMebibytesOfFramesAreCutToTheCaps() throws {
        let frame = #"{"binaryName":"UIKitCore","binaryUUID":"1D2C3B4A-5E6F-3071-8293-A4B5C6D7E8F9","offsetIntoBinaryTextSegment":123456,"address":6643777536,"sampleCount":1}"#
        let stack = #"{"threadAttributed":false,"callStackRootFrames":[\#(frame),\#(frame)]}"#
        var stacks: [String] = []
        var size = 0
        while size < 2 << 20 {
            stacks.append(stack)
            size += stack.utf8.count + 1
        }
        let diagnostic = #"{"diagnosticMetaData":{"signal":11},"callStackTree":{"callStacks":[\#(stacks.joined(separator: ","))]}}"#
        let json = #"{"crashDiagnostics":[\#(Array(repeating: diagnostic, count: 1).joined(separator: ","))]}"#
        let payload = try MetricKitPayload(json: Data(json.utf8))
        #expect(payload.diagnostics[0].threads.count == MetricKitPayload.maxThreads)
        #expect(payload.diagnostics[0].threads.allSatisfy { (1...MetricKitPayload.maxFrames).contains($0.frames.count) })

        let many = #"{"hangDiagnostics":[\#(Array(repeating: #"{"diagnosticMetaData":{}}"#, count: 10_000).joined(separator: ","))]}"#
        #expect(try MetricKitPayload(json: Data(many.utf8)).diagnostics.count == MetricKitPayload.maxDiagnostics)
    }

    @Test func encodesAndDecodesForTheStore() throws {
        let crash = try MetricKitPayload(json: MachOFixture.crashPayload(uuid: Self.uuid, offsets: [0x18])).diagnostics[0]
        let decoded = try JSONDecoder().decode(CrashDiagnostic.self, from: JSONEncoder().encode(crash))
        #expect(decoded == crash)
    }
}
