import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The app and device told to support: installation details and diagnostics.
extension ThreadDeskClient {
    /// Tells support about the app and device (a note in the thread when something changed).
    @discardableResult
    public func updateInstallation(_ installation: [String: InstallationValue]) async throws(ThreadDeskError) -> InstallationResult {
        try await withRetries(attempts: 3) { token throws(ThreadDeskError) in
            var request = request("v1/installation", method: "PUT", token: token)
            try encode(installation, into: &request)
            return try decode(InstallationResult.self, from: try await transport.send(request))
        }
    }

    /// What can be told about this app and device without asking the user.
    public nonisolated static func currentInstallation() -> [String: InstallationValue] {
        var info: [String: InstallationValue] = [:]
        let bundle = Bundle.main.infoDictionary ?? [:]
        if let version = bundle["CFBundleShortVersionString"] as? String { info["appVersion"] = .string(version) }
        if let build = bundle["CFBundleVersion"] as? String { info["buildVersion"] = .string(build) }
        let os = ProcessInfo.processInfo.operatingSystemVersion
        info["osVersion"] = .string("\(os.majorVersion).\(os.minorVersion).\(os.patchVersion)")
        #if os(iOS)
        info["osPlatform"] = "iOS"
        #elseif os(macOS)
        info["osPlatform"] = "macOS"
        #elseif os(Linux)
        info["osPlatform"] = "Linux"
        #endif
        info["locale"] = .string(Locale.current.identifier)
        return info
    }

    /// Uploads a diagnostics document (any `Encodable` that encodes to a JSON object): support
    /// gets it as a file and a readable summary; the user does not see it in the chat. Retried
    /// with one idempotency key, so it is posted once.
    @discardableResult
    public func uploadDiagnostics(_ document: some Encodable & Sendable) async throws(ThreadDeskError) -> DiagnosticsResult {
        let body: Data
        do {
            body = try JSONEncoder().encode(document)
        } catch {
            throw .invalidResponse("could not encode the diagnostics: \(error)")
        }
        return try await uploadDiagnostics(json: body)
    }

    /// Uploads diagnostics that are already JSON (a JSON object).
    @discardableResult
    public func uploadDiagnostics(json body: Data) async throws(ThreadDeskError) -> DiagnosticsResult {
        let key = UUID().uuidString
        return try await withRetries(attempts: configuration.sendAttempts) { token throws(ThreadDeskError) in
            var request = request("v1/diagnostics", method: "POST", token: token)
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue(key, forHTTPHeaderField: APIHeader.idempotencyKey)
            // Diagnostics always need an attested session's assertion.
            return try decode(DiagnosticsResult.self, from: try await sendSigned(request))
        }
    }
}
