import DiscordREST
import Foundation
import Logging
import Prometheus
import ThreadDeskCore
import ThreadDeskStore

/// The developer's dSYMs, uploaded once per build (from CI: `threaddesk admin dsyms upload`):
/// each slice kept in the store by app and UUID, and the reports that waited for one read again,
/// regrouped, and their notes edited in place (or in the outbox, before Discord has them).
struct DSYMLibrary: Sendable {
    let store: any UserStore
    let users: UserSerializer
    let symbols: CrashSymbols
    let regrouping: CrashRegrouping
    let settings: CrashSettings
    let metrics: ServerMetrics
    let logger: Logger
    let now: @Sendable () -> Date

    /// Reports read again per upload at most (the rest keep waiting; a later upload of the same
    /// dSYM reads the next ones).
    static let reportsPerUpload = 1000

    struct Uploaded: Sendable, Codable {
        struct Binary: Sendable, Codable {
            var uuid: String
            var arch: String
            var name: String
        }

        var binaries: [Binary]
        /// Reports read again with them (their notes updated).
        var reports: Int
    }

    struct Refused: Error, CustomStringConvertible {
        let description: String
    }

    /// Keeps every slice with a UUID in `data` (a Mach-O, or a zip of dSYM bundles) for `app`,
    /// then reads again the reports that waited for them.
    /// - Parameter name: The binary's name for a bare Mach-O (a zip names its own).
    /// - Throws: `Refused` for an upload that holds no Mach-O slice with a UUID.
    func upload(_ data: Data, app: AppID, name: String?) async throws -> Uploaded {
        let files: [(name: String, data: Data)]
        do {
            files = try DSYMArchive.binaries(in: data, limit: settings.maxDSYMBytes)
        } catch let failure as DSYMArchive.Failure {
            throw Refused(description: failure.reason)
        }
        var binaries: [Uploaded.Binary] = []
        for file in files {
            guard let slices = try? MachOFile.slices(of: file.data) else { continue }
            let fileName = file.name == "binary" ? (name ?? file.name) : file.name
            for slice in slices {
                try await store.saveDSYM(DSYMFile(app: app, uuid: slice.uuid, arch: slice.arch, name: fileName, bytes: file.data, uploadedAt: now()))
                symbols.forget(app: app, uuid: slice.uuid)
                binaries.append(.init(uuid: slice.uuid, arch: slice.arch, name: fileName))
            }
        }
        guard !binaries.isEmpty else { throw Refused(description: "The upload holds no Mach-O binary with a UUID (LC_UUID).") }
        logger.notice("dSYMs uploaded", metadata: ["app": "\(app)", "binaries": "\(binaries.map(\.uuid))"])
        var read = 0
        for binary in binaries where read < Self.reportsPerUpload {
            for report in try await store.crashReports(awaiting: binary.uuid, app: app, limit: Self.reportsPerUpload - read) {
                do {
                    if try await readAgain(report) { read += 1 }
                } catch {
                    logger.warning("Could not symbolicate a waiting crash report", metadata: ["report": "\(report.id)", "error": "\(error)"])
                }
            }
        }
        return Uploaded(binaries: binaries, reports: read)
    }

    /// A waiting report read again under its user's turn.
    private func readAgain(_ waiting: CrashReport) async throws -> Bool {
        try await users.withUser(waiting.owner) { _ in
            guard let report = try await store.crashReport(waiting.id) else { return false }
            return try await regrouping.readAgain(report) != nil
        }
    }
}
