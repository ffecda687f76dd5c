import DiscordREST
import Foundation

/// One MetricKit `MXDiagnosticPayload.jsonRepresentation()` document, read for its crashes and
/// hangs (its CPU, disk-write and launch diagnostics are left out). The document comes from a
/// client, so every list and text is capped: a hostile one costs little and says less.
public struct MetricKitPayload: Sendable {
    /// Diagnostics kept from one document, crashes before hangs.
    public static let maxDiagnostics = 32
    /// Threads kept per diagnostic.
    public static let maxThreads = 256
    /// Frames kept per thread (a deeper stack is cut: its top is what tells).
    public static let maxFrames = 512
    /// Characters kept of each text (a version, a device, a binary's name, a reason).
    public static let maxText = 200

    public let diagnostics: [CrashDiagnostic]
    /// The period the payload covers, as MetricKit writes it ("2024-01-15 10:00:00").
    public let timeStampBegin: String?
    public let timeStampEnd: String?

    public init(json: Data) throws(CrashPayloadError) {
        let document: JSON
        do {
            document = try JSON.parse(json)
        } catch {
            throw CrashPayloadError("The crash report is not JSON (or is nested too deep).")
        }
        guard case .object(let members) = document else {
            throw CrashPayloadError("The crash report is not a JSON object.")
        }
        var diagnostics: [CrashDiagnostic] = []
        for (key, kind) in [("crashDiagnostics", CrashDiagnostic.Kind.crash), ("hangDiagnostics", .hang)] {
            guard let list = members[key], !list.isNull else { continue }
            guard case .array(let items) = list else {
                throw CrashPayloadError("`\(key)` is not an array.")
            }
            for (index, item) in items.enumerated() where diagnostics.count < Self.maxDiagnostics {
                diagnostics.append(try MetricKitReader.diagnostic(item, kind: kind, path: "\(key)[\(index)]"))
            }
        }
        guard !diagnostics.isEmpty else {
            throw CrashPayloadError("The crash report holds no crash or hang diagnostic (`crashDiagnostics`, `hangDiagnostics`).")
        }
        self.diagnostics = diagnostics
        self.timeStampBegin = try MetricKitReader.text(members["timeStampBegin"], path: "timeStampBegin")
        self.timeStampEnd = try MetricKitReader.text(members["timeStampEnd"], path: "timeStampEnd")
    }
}
