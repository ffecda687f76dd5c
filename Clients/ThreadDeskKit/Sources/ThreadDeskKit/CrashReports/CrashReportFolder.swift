import Foundation

/// The payloads waiting to be sent, one file each in a directory: named by when it was kept and
/// its SHA-256 (`<milliseconds>-<hex>.json`, so names sort oldest first and a payload is kept
/// once), written atomically and readable by the owner only, so a kept payload survives the app
/// being killed.
struct CrashReportFolder: Sendable {
    let directory: URL
    /// At most this many files; keeping one more drops the oldest.
    let maxKept: Int
    /// Bigger payloads are not kept: the server would refuse them (413).
    let maxSize: Int

    /// Keeps `payload` unless it is too big or holds no crash or hang; false when not kept.
    func keep(_ payload: Data, at date: Date = Date()) -> Bool {
        guard payload.count <= maxSize, Self.holdsCrashOrHang(payload) else { return false }
        let digest = PayloadDigest.sha256Hex(payload)
        let kept = files()
        if kept.contains(where: { $0.lastPathComponent.hasSuffix("-\(digest).json") }) { return true }
        let milliseconds = String(UInt64(max(0, date.timeIntervalSince1970 * 1000)))
        let name = String(repeating: "0", count: max(0, 15 - milliseconds.count)) + milliseconds + "-\(digest).json"
        let url = directory.appendingPathComponent(name)
        do {
            try PrivateFile.write(payload, to: url)
        } catch {
            return false
        }
        for old in (kept + [url]).sorted(by: { $0.lastPathComponent < $1.lastPathComponent }).dropLast(max(1, maxKept)) {
            remove(old)
        }
        return true
    }

    /// The kept payloads' files, oldest first (a write under way, a hidden temporary file, is not one).
    func files() -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted().map { directory.appendingPathComponent($0) }
    }

    func remove(_ url: URL) {
        try? FileManager.default.removeItem(at: url)
    }

    /// Whether `payload` is a diagnostic payload with at least one crash or hang: the only
    /// diagnostics the server files. Only the two arrays' lengths are read.
    static func holdsCrashOrHang(_ payload: Data) -> Bool {
        guard let counts = try? JSONDecoder().decode(DiagnosticCounts.self, from: payload) else { return false }
        return counts.crashes + counts.hangs > 0
    }

    private struct DiagnosticCounts: Decodable {
        var crashes: Int
        var hangs: Int

        private enum CodingKeys: String, CodingKey {
            case crashDiagnostics, hangDiagnostics
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            func count(_ key: CodingKeys) throws -> Int {
                guard container.contains(key), try !container.decodeNil(forKey: key) else { return 0 }
                return try container.nestedUnkeyedContainer(forKey: key).count ?? 0
            }
            crashes = try count(.crashDiagnostics)
            hangs = try count(.hangDiagnostics)
        }
    }
}
