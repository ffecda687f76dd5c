import Crypto
import Deadlines
import Foundation
import NIOHTTP1
import Synchronization

extension APNsEmulator {
    /// The answer to one request, and how long to wait before giving it.
    struct Answer {
        var status: HTTPResponseStatus
        var headers: [(String, String)] = []
        var body: Data = Data()
        var delay: Duration = .zero
    }

    static let validPushTypes: Set<String> = ["alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk"]

    /// Apple's checks, in roughly the order Apple applies them. Every answer carries the
    /// request's `apns-id` (or a new one), as Apple's do: clients match answers by it.
    func answer(method: HTTPMethod, uri: String, headers: HTTPHeaders, body: Data) -> Answer {
        var answer = check(method: method, uri: uri, headers: headers, body: body)
        observers.changed()
        let requested = headers.first(name: "apns-id").flatMap { UUID(uuidString: $0) != nil ? $0 : nil }
        if let requested {
            answer.headers.removeAll { $0.0 == "apns-id" }
            answer.headers.append(("apns-id", requested))
        }
        return answer
    }

    private func check(method: HTTPMethod, uri: String, headers: HTTPHeaders, body: Data) -> Answer {
        state.withLock { $0.counters.requests += 1 }
        if method == .GET && uri == "/_emulator/deliveries" {
            let data = (try? JSONEncoder().encode(deliveries)) ?? Data("[]".utf8)
            return Answer(status: .ok, headers: [("content-type", "application/json")], body: data)
        }
        guard method == .POST else { return reject(405, "MethodNotAllowed") }
        let prefix = "/3/device/"
        guard uri.hasPrefix(prefix) else { return reject(404, "BadPath") }
        let token = String(uri.dropFirst(prefix.count)).lowercased()
        guard !token.isEmpty else { return reject(400, "MissingDeviceToken") }
        guard token.count >= 64, token.count <= 200, token.allSatisfy(\.isHexDigit) else { return reject(400, "BadDeviceToken") }

        for name in ["apns-topic", "apns-push-type", "apns-priority", "apns-id", "apns-expiration", "apns-collapse-id", "authorization"]
        where headers[name].count > 1 {
            return reject(400, "DuplicateHeaders")
        }
        if let problem = checkProviderToken(headers.first(name: "authorization")) { return problem }
        guard let topic = headers.first(name: "apns-topic") else { return reject(400, "MissingTopic") }
        guard topic == configuration.topic || configuration.otherTopics.contains(topic) else { return reject(400, "DeviceTokenNotForTopic") }
        // Required only for watchOS; Apple assumes an alert when it is absent.
        let pushType = headers.first(name: "apns-push-type") ?? "alert"
        guard Self.validPushTypes.contains(pushType) else { return reject(400, "InvalidPushType") }
        let priority = headers.first(name: "apns-priority").map { Int($0) ?? -1 } ?? 10
        guard [1, 5, 10].contains(priority), !(pushType == "background" && priority != 5) else { return reject(400, "BadPriority") }
        let expiration = headers.first(name: "apns-expiration")
        guard expiration.map({ Int($0) != nil }) ?? true else { return reject(400, "BadExpirationDate") }
        let collapseID = headers.first(name: "apns-collapse-id")
        guard (collapseID?.utf8.count ?? 0) <= 64 else { return reject(400, "BadCollapseId") }
        let apnsID = headers.first(name: "apns-id") ?? UUID().uuidString.lowercased()
        guard UUID(uuidString: apnsID) != nil else { return reject(400, "BadMessageId") }
        guard !body.isEmpty else { return reject(400, "PayloadEmpty") }
        guard body.count <= 4096 else { return reject(413, "PayloadTooLarge") }

        var delay = Duration.zero
        let scripted = state.withLock { state -> Outcome? in
            if let permanent = state.permanent[token] { return permanent }
            guard var queue = state.scripts[token], !queue.isEmpty else { return nil }
            let next = queue.removeFirst()
            state.scripts[token] = queue
            return next
        }
        switch scripted {
        case .reject(let status, let reason): return reject(status, reason)
        case .unregistered(let timestamp): return reject(410, "Unregistered", timestamp: timestamp)
        case .delay(let milliseconds): delay = .milliseconds(milliseconds)
        case .deliver, nil: break
        }
        let delivery = Delivery(
            deviceToken: token, apnsID: apnsID, topic: topic, pushType: pushType, priority: priority, collapseID: collapseID,
            expiration: expiration.flatMap { Int($0) }, payload: body, receivedAt: Date())
        state.withLock {
            $0.deliveries.append(delivery)
            $0.counters.delivered += 1
        }
        return Answer(status: .ok, headers: [("apns-id", apnsID), ("apns-unique-id", UUID().uuidString.lowercased())], delay: delay)
    }

    /// The provider token: an ES256 JWT from our team and key, signed by the key we hold, not
    /// older than an hour.
    func checkProviderToken(_ authorization: String?) -> Answer? {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else { return reject(403, "MissingProviderToken") }
        let token = authorization.dropFirst("bearer ".count)
        if let issued = state.withLock({ $0.verifiedTokens[token] }) { return checkAge(issued: issued) }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerData = Self.base64URL(parts[0]), let claimsData = Self.base64URL(parts[1]), let signatureData = Self.base64URL(parts[2]),
            let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any],
            let claims = (try? JSONSerialization.jsonObject(with: claimsData)) as? [String: Any]
        else { return reject(403, "InvalidProviderToken") }
        guard header["alg"] as? String == "ES256" else { return reject(403, "InvalidProviderToken") }
        guard header["kid"] as? String == configuration.keyID else { return reject(403, "InvalidProviderToken") }
        guard claims["iss"] as? String == configuration.teamID else { return reject(403, "InvalidProviderToken") }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            teamKey.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { return reject(403, "InvalidProviderToken") }
        guard let issued = (claims["iat"] as? NSNumber)?.doubleValue else { return reject(403, "InvalidProviderToken") }
        if let problem = checkAge(issued: issued) { return problem }
        state.withLock { state in
            if state.verifiedTokens.count >= 64 { state.verifiedTokens.removeAll() }
            state.verifiedTokens[token] = issued
        }
        return nil
    }

    private func checkAge(issued: Double) -> Answer? {
        let age = Date().timeIntervalSince1970 - issued
        if age > 3600 { return reject(403, "ExpiredProviderToken") }
        if age < -300 { return reject(403, "InvalidProviderToken") }
        return nil
    }

    func reject(_ status: Int, _ reason: String, timestamp: Int64? = nil) -> Answer {
        state.withLock { $0.counters.rejected[reason, default: 0] += 1 }
        var object: [String: Any] = ["reason": reason]
        if let timestamp { object["timestamp"] = timestamp }
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return Answer(
            status: HTTPResponseStatus(statusCode: status),
            headers: [("content-type", "application/json"), ("apns-id", UUID().uuidString.lowercased())], body: body)
    }

    static func base64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
