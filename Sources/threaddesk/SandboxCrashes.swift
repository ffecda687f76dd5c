import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskServer

/// Crash reports in the sandbox, with no Mac and no clang: the sample app MyShop's dSYM (built by
/// `scripts/make-crash-fixture`) uploaded at start through `POST /internal/dsyms`, as CI uploads a
/// build's, and a MetricKit payload of MyShop crashing that the widget sends to `/v1/crashes`.
struct SandboxCrashes: Sendable {
    /// The app the sample's dSYM is of (the widget's first app).
    let app: AppID
    /// `DSYMS_SECRET`: random for each run.
    let secret = "sandbox-dsyms-" + Sandbox.randomHex(16)
    let logger: Logger

    /// The upload's deadline: one small file to this process.
    static let uploadTimeout = Duration.seconds(10)

    /// The payload the widget sends (it changes its version, build and time on each click).
    static var samplePayload: [UInt8] { PackageResources.sample_crash_json }

    /// Sends MyShop's dSYM to the server listening on `port` (on loopback), as
    /// `threaddesk admin dsyms upload` does; a failure is logged (reports then stay unsymbolicated).
    func uploadSample(to port: Int) async {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("threaddesk-sandbox-\(Sandbox.randomHex(6))-MyShop.dwarf")
        defer { try? FileManager.default.removeItem(at: file) }
        do {
            try Data(PackageResources.MyShop_dwarf).write(to: file)
            guard let server = URL(string: "http://127.0.0.1:\(port)") else { return }
            _ = try await DSYMUploader.upload(file, to: server, secret: secret, app: app.rawValue, name: "MyShop", timeout: Self.uploadTimeout)
            logger.notice("Sample dSYM uploaded (MyShop): the widget's crash reports are symbolicated")
        } catch {
            logger.warning("The sample dSYM was not uploaded: crash reports stay unsymbolicated", metadata: ["error": "\(error)"])
        }
    }
}
