import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What App Attest does on the device: make a key, attest it, sign requests with it. ThreadDesk
/// servers with `APP_ATTEST` on serve genuine copies of the app (and count their limits per
/// device); set ``ThreadDeskConfiguration/appAttest`` and the client attests and signs what needs it.
///
/// Each method takes the client data itself (not its hash): the provider hashes it with SHA-256,
/// as `DCAppAttestService` expects, so this package needs no crypto library of its own.
public protocol AppAttestProvider: Sendable {
    /// A new key's id, base64 (`DCAppAttestService.generateKey`).
    func generateKey() async throws -> String
    /// The attestation object of the key over SHA-256(`clientData`).
    func attestKey(_ keyID: String, clientData: Data) async throws -> Data
    /// An assertion by the key over SHA-256(`clientData`).
    func generateAssertion(_ keyID: String, clientData: Data) async throws -> Data
    /// Whether `error` (from `generateAssertion`) says the key is gone for good (the app restored
    /// onto another device: `DCError.invalidKey`), so a new key is to be attested. Any other error
    /// is passed on as it is: a new key for a passing failure would only pile up keys.
    func isKeyLost(_ error: any Error) -> Bool
}

extension AppAttestProvider {
    public func isKeyLost(_ error: any Error) -> Bool { false }
}

#if canImport(DeviceCheck) && canImport(CryptoKit)
import CryptoKit
import DeviceCheck

/// App Attest on the device: the Secure Enclave through `DCAppAttestService`. Not built on
/// Linux (ThreadDesk's CI); kept to the three calls.
@available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
public struct DeviceCheckAttestProvider: AppAttestProvider {
    public init() {}

    /// False on devices without App Attest (simulators, older Macs): leave `appAttest` nil there.
    public static var isSupported: Bool { DCAppAttestService.shared.isSupported }

    public func generateKey() async throws -> String {
        try await DCAppAttestService.shared.generateKey()
    }

    public func attestKey(_ keyID: String, clientData: Data) async throws -> Data {
        try await DCAppAttestService.shared.attestKey(keyID, clientDataHash: Data(SHA256.hash(data: clientData)))
    }

    public func generateAssertion(_ keyID: String, clientData: Data) async throws -> Data {
        try await DCAppAttestService.shared.generateAssertion(keyID, clientDataHash: Data(SHA256.hash(data: clientData)))
    }

    public func isKeyLost(_ error: any Error) -> Bool { (error as? DCError)?.code == .invalidKey }
}
#endif

/// The sandbox's software attester (`threaddesk sandbox`, `/sandbox/attester`) standing in for
/// the Secure Enclave: for `threaddesk-chat --attest` and tests. Its attestations pass only on a
/// server that trusts the sandbox's root (`APP_ATTEST_EXTRA_ROOT`), never in production.
public struct SandboxAttestProvider: AppAttestProvider {
    public let attesterURL: URL
    let session: URLSession

    /// `attesterURL`: the sandbox's `…/sandbox/attester`.
    public init(attesterURL: URL) {
        self.attesterURL = attesterURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 15
        session = URLSession(configuration: configuration)
    }

    struct Failed: Error, CustomStringConvertible {
        let description: String
    }

    public func generateKey() async throws -> String {
        try await call("keys", [:])["keyId"] ?? ""
    }

    public func attestKey(_ keyID: String, clientData: Data) async throws -> Data {
        try await bytes(try await call("attest", ["keyId": keyID, "clientData": clientData.base64EncodedString()])["attestationObject"])
    }

    public func generateAssertion(_ keyID: String, clientData: Data) async throws -> Data {
        try await bytes(try await call("assert", ["keyId": keyID, "clientData": clientData.base64EncodedString()])["assertion"])
    }

    private func bytes(_ base64: String?) async throws -> Data {
        guard let base64, let data = Data(base64Encoded: base64) else { throw Failed(description: "the sandbox attester answered no data") }
        return data
    }

    private func call(_ path: String, _ body: [String: String]) async throws -> [String: String] {
        var request = URLRequest(url: attesterURL.appendingPathComponent(path))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONEncoder().encode(body)
        let (data, response) = try await session.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
            throw Failed(description: "the sandbox attester refused: \(String(decoding: data, as: UTF8.self))")
        }
        return try JSONDecoder().decode([String: String].self, from: data)
    }
}
