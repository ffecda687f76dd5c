// Fuzz target: the MetricKit payload reader. Hostile JSON ends in an error or in diagnostics
// within the reader's caps: no list past its limit, no text past its length or holding a control
// character, the attributed thread first, every UUID canonical.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMetricKit(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let raw = Data(bytes: start, count: count)
    // The server cuts the deepest stacks first: the cut leaves a document no deeper than its limit.
    let data = MetricKitPayload.cuttingDeepStacks(raw, depth: 16)
    precondition(JSON.shape(of: data).depth <= 18, "the cut left a document deeper than its limit")
    guard let payload = try? MetricKitPayload(json: data) else { return 0 }
    precondition(!payload.diagnostics.isEmpty && payload.diagnostics.count <= MetricKitPayload.maxDiagnostics, "diagnostics out of bounds")
    for diagnostic in payload.diagnostics {
        let texts = [diagnostic.appVersion, diagnostic.appBuild, diagnostic.osVersion, diagnostic.deviceType, diagnostic.architecture,
            diagnostic.bundleID, diagnostic.terminationReason, diagnostic.hangDuration]
        let names = diagnostic.threads.flatMap { $0.frames.map(\.binaryName) }
        for text in (texts + names).compactMap({ $0 }) {
            precondition(text.count <= MetricKitPayload.maxText, "a text past its length")
            precondition(ControlCharacters.first(in: text) == nil && !text.contains("\n"), "a text holds a control character")
        }
        precondition(diagnostic.threads.count <= MetricKitPayload.maxThreads, "threads out of bounds")
        let attributed = diagnostic.threads.map(\.attributed)
        precondition(attributed == attributed.sorted { $0 && !$1 }, "an attributed thread after another")
        for thread in diagnostic.threads {
            precondition(thread.frames.count <= MetricKitPayload.maxFrames, "frames out of bounds")
            for uuid in thread.frames.compactMap(\.binaryUUID) {
                precondition(uuid.count == 36 && CrashFrame.canonicalUUID(uuid) == uuid, "a UUID not canonical")
            }
        }
    }
    return 0
}
