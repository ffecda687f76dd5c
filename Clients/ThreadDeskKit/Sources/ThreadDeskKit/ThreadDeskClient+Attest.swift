import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// App Attest: sessions opened by an attested key, and assertions on the requests that need them.
extension ThreadDeskClient {
    /// The attested key of a session: its token names the device (`…~secret.<key id, base64url>`).
    nonisolated static func attestedKeyID(inToken token: String) -> String? {
        guard let tilde = token.lastIndex(of: "~") else { return nil }
        let rest = token[token.index(after: tilde)...]
        guard let dot = rest.firstIndex(of: "."), rest.index(after: dot) < rest.endIndex else { return nil }
        var base64 = rest[rest.index(after: dot)...].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return base64
    }

    /// A one-time challenge; nil when the server has App Attest off (no such route).
    func attestChallenge() async throws(ThreadDeskError) -> String? {
        var request = request("v1/attest/challenge", method: "POST")
        request.setValue(configuration.appKey, forHTTPHeaderField: APIHeader.appKey)
        do {
            return try decode(AttestChallenge.self, from: try await transport.send(request)).challenge
        } catch where error.isServer(status: 404) {
            return nil
        }
    }

    /// The session request's attestation or assertion: the kept key asserts (a renewal, a new
    /// session of the same device), a new key is attested. Nil without a provider or App Attest.
    func attest(_ request: inout URLRequest, body: inout SessionRequest, keyID known: String?) async throws(ThreadDeskError) {
        guard let provider = configuration.appAttest, let challenge = try await attestChallenge() else { return }
        if let known {
            try encode(body, into: &request)
            do {
                request.setValue(
                    try await assertionHeader(provider, keyID: known, request: request, challenge: challenge),
                    forHTTPHeaderField: AppAttestAssertion.headerName)
                return
            } catch where provider.isKeyLost(error) {
                // The device no longer has the key (the app was restored onto another device, where
                // Apple's keys do not follow): a new key is attested instead, with the same challenge.
            } catch {
                throw .transport("App Attest failed: \(error)")
            }
        }
        do {
            let keyID = try await provider.generateKey()
            let object = try await provider.attestKey(keyID, clientData: Data(challenge.utf8))
            body.attestation = AttestationPayload(keyId: keyID, attestationObject: object.base64EncodedString(), challenge: challenge)
            try encode(body, into: &request)
        } catch let error as ThreadDeskError {
            throw error
        } catch {
            throw .transport("App Attest failed: \(error)")
        }
    }

    /// `request` with an assertion over it by the session's key (a fresh challenge each time).
    /// When the device lost the key (restored onto another device), a new session with a newly
    /// attested key first, and the request as that session.
    func asserted(_ request: URLRequest) async throws(ThreadDeskError) -> URLRequest {
        guard let provider = configuration.appAttest, let current = session, let keyID = Self.attestedKeyID(inToken: current.token),
            let challenge = try await attestChallenge()
        else { return request }
        var request = request
        // As the session is now: another call may have replaced the one the request was made with.
        if request.value(forHTTPHeaderField: "Authorization") != nil {
            request.setValue("Bearer \(current.token)", forHTTPHeaderField: "Authorization")
        }
        do {
            request.setValue(
                try await assertionHeader(provider, keyID: keyID, request: request, challenge: challenge),
                forHTTPHeaderField: AppAttestAssertion.headerName)
            return request
        } catch where provider.isKeyLost(error) {
            // Below: a new key, through a new session; once per lost key.
        } catch {
            throw .transport("App Attest failed: \(error)")
        }
        // Replaced by another call meanwhile, or now: once per lost key.
        let replacedAlready = session.map { $0.token != current.token } ?? false
        guard lostKeysReplaced.insert(keyID).inserted || replacedAlready || replacing?.token == current.token else {
            throw .invalidResponse("App Attest: this device lost its key and attesting a new one did not succeed; open the session again")
        }
        let renewed = try await replaceSession(current)
        request.setValue("Bearer \(renewed.token)", forHTTPHeaderField: "Authorization")
        guard let newKey = Self.attestedKeyID(inToken: renewed.token), let fresh = try await attestChallenge() else {
            request.setValue(nil, forHTTPHeaderField: AppAttestAssertion.headerName)
            return request
        }
        do {
            request.setValue(
                try await assertionHeader(provider, keyID: newKey, request: request, challenge: fresh),
                forHTTPHeaderField: AppAttestAssertion.headerName)
        } catch {
            throw .transport("App Attest failed: \(error)")
        }
        return request
    }

    /// Sends `request`; when the server asks for an assertion (a first message), sends it once more with one.
    func sendAsserting(_ request: URLRequest) async throws(ThreadDeskError) -> Transport.Reply {
        do {
            return try await transport.send(request)
        } catch where error.isServer(status: 401, code: .assertionRequired) {
            guard configuration.appAttest != nil else { throw error }
            return try await sendSigned(request)
        }
    }

    /// Sends `request` with an assertion over it. Signed requests sent at once can reach the
    /// server out of order, and the later counter, arriving first, makes the earlier one look
    /// replayed: such a request is signed anew (a higher counter) and sent again, a few times.
    func sendSigned(_ request: URLRequest) async throws(ThreadDeskError) -> Transport.Reply {
        var overtaken = 0
        while true {
            do {
                return try await transport.send(try await asserted(request))
            } catch where error.isServer(status: 401, code: .assertionReplayed) {
                overtaken += 1
                guard overtaken < Self.signingAttempts else { throw error }
            }
        }
    }

    /// How many times a signed request is signed at most.
    static let signingAttempts = 4

    private func assertionHeader(_ provider: any AppAttestProvider, keyID: String, request: URLRequest, challenge: String) async throws -> String {
        let clientData = AppAttestAssertion.clientData(
            method: request.httpMethod ?? "GET", path: request.url?.path ?? "/", challenge: challenge, body: Array(request.httpBody ?? Data()))
        let assertion = try await provider.generateAssertion(keyID, clientData: Data(clientData))
        return AppAttestAssertion.header(keyId: keyID, challenge: challenge, assertion: assertion.base64EncodedString())
    }
}
