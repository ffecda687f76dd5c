import Foundation
import Logging
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

/// Reads a diagnostic with the app's dSYMs: which frames are the app's, what their functions
/// and lines are (`llvm-symbolizer` on the dSYM kept in the store, written once per replica into
/// a cache folder), which binaries still wait for a dSYM, and the signature.
final class CrashSymbols: Sendable {
    let store: any CrashRecords
    /// Nil when no `llvm-symbolizer` was found: reports group by offsets.
    let symbolizer: Symbolizer?
    /// Where this replica writes the dSYMs it reads (one file per app and UUID).
    let cache: URL
    let logger: Logger
    private let slices = Mutex<[String: MachOSlice]>([:])
    /// How many of the app's frames (from the top of the crashed thread) are symbolicated.
    static let framesRead = 16

    init(store: any CrashRecords, symbolizer: Symbolizer?, cache: URL, logger: Logger) {
        (self.store, self.symbolizer, self.cache, self.logger) = (store, symbolizer, cache, logger)
    }

    func read(_ diagnostic: CrashDiagnostic, app: AppID) async throws -> CrashReading {
        let frames = diagnostic.threads.first?.frames ?? []
        let uuids = Set(frames.compactMap(\.binaryUUID))
        let known = try await store.dsymDescriptions(app: app, uuids: Array(uuids))
        let withDSYM = Set(known.map(\.uuid))
        let isApp = CrashSignature.appFrames(dsymUUIDs: withDSYM, executable: CrashSignature.mainBinaryName(of: diagnostic))
        let appFrames = frames.indices.filter { isApp(frames[$0]) }
        var symbols: [Int: SymbolicatedFrame] = [:]
        // Binaries whose symbolication failed for a reason that passes (a deadline, the disk): the
        // report waits for them as for a dSYM not yet uploaded, and is read again with the next.
        var failed: Set<String> = []
        if let symbolizer {
            // The top frames only: the note shows 6 and the signature reads 3; a stack of 512 frames
            // costs no more than one of 16.
            let wanted = appFrames.prefix(Self.framesRead).filter { frames[$0].binaryUUID.map(withDSYM.contains) == true }
            let byBinary = Dictionary(grouping: wanted) { frames[$0].binaryUUID! }
            for (uuid, indexes) in byBinary.sorted(by: { $0.key < $1.key }) {
                do {
                    guard let (file, slice) = try await local(app: app, uuid: uuid) else { continue }
                    let found = try await symbolizer.symbolicate(indexes.map { frames[$0].offset }, in: file, slice: slice)
                    for (index, symbol) in zip(indexes, found) { symbols[index] = symbol }
                } catch {
                    failed.insert(uuid)
                    logger.warning("Could not symbolicate a crash report's frames", metadata: ["uuid": "\(uuid)", "error": "\(error)"])
                }
            }
        }
        let awaiting = Set(appFrames.compactMap { frames[$0].binaryUUID }).subtracting(withDSYM).union(failed).sorted()
        let signature = CrashSignature.of(diagnostic, symbols: symbols, isAppFrame: isApp)
        return CrashReading(diagnostic: diagnostic, symbols: symbols, appFrames: appFrames, awaiting: awaiting, signature: signature)
    }

    /// The dSYM of `uuid` as a file of this replica, and its slice; nil when the store has none
    /// (or no slice of that UUID).
    private func local(app: AppID, uuid: String) async throws -> (URL, MachOSlice)? {
        let key = "\(app.rawValue)/\(uuid)"
        let file = cache.appendingPathComponent(app.rawValue, isDirectory: true).appendingPathComponent(uuid + ".dwarf")
        if let slice = slices.withLock({ $0[key] }), FileManager.default.fileExists(atPath: file.path) { return (file, slice) }
        guard let stored = try await store.dsym(app: app, uuid: uuid),
            let slice = (try? MachOFile.slices(of: stored.bytes))?.first(where: { $0.uuid == uuid })
        else { return nil }
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        // Written whole, then renamed: a reader never sees half a file, and replicas sharing the folder agree.
        try stored.bytes.write(to: file, options: .atomic)
        slices.withLock { $0[key] = slice }
        return (file, slice)
    }

    /// A dSYM uploaded again: its file is written anew before it is read next (renamed over the
    /// old one, never deleted first: another replica sharing the folder may be reading it).
    func forget(app: AppID, uuid: String) {
        _ = slices.withLock { $0.removeValue(forKey: "\(app.rawValue)/\(uuid)") }
    }
}
