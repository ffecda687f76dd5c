import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Crash and hang reports: MetricKit's diagnostic payloads, as the system gives them.
extension ThreadDeskClient {
    /// The largest payload `POST /v1/crashes` takes (2 MiB); a bigger one is answered 413.
    public static let crashReportLimit = 2 * 1024 * 1024

    /// Uploads one MetricKit diagnostic payload (`MXDiagnosticPayload.jsonRepresentation()`,
    /// unchanged): support gets its crashes and hangs grouped by cause. Its key is the payload's
    /// SHA-256, so however often it is sent (retried, or again after the app was killed before
    /// the answer) the server files it once. ``SupportCrashReports`` does this for the app.
    @discardableResult
    public func uploadCrashReport(_ payload: Data) async throws(ThreadDeskError) -> CrashUploadResult {
        let key = PayloadDigest.sha256Hex(payload)
        return try await withRetries(attempts: configuration.sendAttempts) { token throws(ThreadDeskError) in
            var request = request("v1/crashes", method: "POST", token: token)
            request.httpBody = payload
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue(key, forHTTPHeaderField: APIHeader.idempotencyKey)
            // As diagnostics: signed by the session's key when the app has App Attest on.
            return try decode(CrashUploadResult.self, from: try await sendSigned(request))
        }
    }

    /// Sends the kept crash reports, when a reporter was started for this client
    /// (``SupportCrashReports/start(client:directory:)``): what the conversation does once live.
    func sendCrashReports() async {
        await crashReports.current?.send()
    }
}
