import APNs
import Crypto
import Foundation
import Logging

/// The Apple side: the `.p8` key (P-256, PEM), the key and team ids' shape, a provider token
/// signed with it, the topic; with `--push-to`, one notification through the APNs client.
extension Doctor {
    func apnsChecks() async -> [DoctorCheck] {
        guard let settings = configuration.apns else {
            return [DoctorCheck("apns", passed: "not configured: no pushes (set APNS_KEY_ID, APNS_TEAM_ID, APNS_TOPIC and the key to send them)")]
        }
        var checks: [DoctorCheck] = []
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: settings.privateKeyPEM)
            checks.append(DoctorCheck("apns.key", passed: "a P-256 private key (ES256)"))
        } catch {
            checks.append(
                DoctorCheck(
                    "apns.key", failed: "APNS_PRIVATE_KEY is not a P-256 private key in PEM",
                    fix: "use the .p8 file Apple gave you as it is (-----BEGIN PRIVATE KEY-----…), through APNS_PRIVATE_KEY_PATH"))
            return checks + topicChecks(settings)
        }
        let idProblems = [("APNS_KEY_ID", settings.keyID), ("APNS_TEAM_ID", settings.teamID)]
            .filter { !Self.isAppleID($0.1) }.map(\.0)
        checks.append(
            idProblems.isEmpty
                ? DoctorCheck("apns.ids", passed: "key \(settings.keyID), team \(settings.teamID)")
                : DoctorCheck(
                    "apns.ids", failed: "\(idProblems.joined(separator: " and ")) not 10 letters and digits",
                    fix: "copy the key's id (Keys) and your team id (Membership) from the Apple Developer site"))
        do {
            let tokens = try APNsTokenManager(
                keyID: settings.keyID, teamID: settings.teamID, privateKeyPEM: settings.privateKeyPEM, clock: ContinuousClock())
            let token = try await tokens.token()
            let parts = token.split(separator: ".")
            guard parts.count == 3, let signature = Base64URL.decode(parts[2]),
                let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
                key.publicKey.isValidSignature(ecdsa, for: Data((parts[0] + "." + parts[1]).utf8))
            else {
                checks.append(DoctorCheck("apns.token", failed: "the provider token does not verify", fix: "use the .p8 key as Apple gave it"))
                return checks + topicChecks(settings)
            }
            checks.append(DoctorCheck("apns.token", passed: "a provider token signed (ES256)"))
        } catch {
            checks.append(DoctorCheck("apns.token", failed: "no provider token could be signed (\(error))", fix: "use the .p8 key as Apple gave it"))
        }
        checks += topicChecks(settings)
        if let device = options.pushTo { checks.append(await pushCheck(settings, device: device)) }
        return checks
    }

    /// Apple's key and team ids: 10 characters, upper-case letters and digits.
    static func isAppleID(_ id: String) -> Bool {
        id.count == 10 && id.allSatisfy { $0.isASCII && ($0.isNumber || $0.isUppercase) }
    }

    /// The topic of every app: its own (apps file) or the deployment's `APNS_TOPIC`.
    func topicChecks(_ settings: APNsSettings) -> [DoctorCheck] {
        let apps = configuration.catalog.apps
        guard configuration.apps != nil else { return [topicCheck(settings.topic, named: "APNS_TOPIC")] }
        return apps.map { app in
            app.apnsTopic.map { topicCheck($0, named: "app \(app.id): apns.topic") } ?? topicCheck(settings.topic, named: "APNS_TOPIC (app \(app.id))")
        }
    }

    func topicCheck(_ topic: String, named name: String) -> DoctorCheck {
        let parts = topic.split(separator: ".", omittingEmptySubsequences: false)
        let wellFormed = parts.count >= 2 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") } }
        return wellFormed
            ? DoctorCheck("apns.topic", passed: topic)
            : DoctorCheck("apns.topic", failed: "\(name) \(topic) is not a bundle id", fix: "set it to the app's bundle id (com.example.app)")
    }

    func pushCheck(_ settings: APNsSettings, device: String) async -> DoctorCheck {
        let environment = options.pushEnvironment ?? settings.defaultEnvironment
        let sender: PushSender
        do {
            sender = try PushSender(settings: settings, logger: logger)
        } catch {
            return DoctorCheck("apns.push", failed: "the APNs client could not start (\(error))", fix: "check APNS_URL and APNS_CA_FILE")
        }
        let notification = APNsNotification(
            pushType: .alert, title: "ThreadDesk", body: "A test notification from threaddesk doctor.", sound: configuration.push.sound)
        let result: DoctorCheck
        do {
            let delivery = try await sender.client.send(notification, to: device, environment: environment)
            result = DoctorCheck("apns.push", passed: "Apple accepted it (\(environment.rawValue), apns-id \(delivery.apnsID ?? "none"))")
        } catch {
            let fix: String =
                switch error.reason {
                case .some(.badDeviceToken): "the token is not one of \(environment.rawValue): a build from Xcode has development tokens (--push-environment)"
                case .some(.deviceTokenNotForTopic): "the token belongs to another app: check APNS_TOPIC"
                case .some(.invalidProviderToken): "check APNS_KEY_ID, APNS_TEAM_ID and that the key has APNs enabled"
                default: "see Apple's reason"
                }
            result = DoctorCheck("apns.push", failed: "Apple refused it: \(error)", fix: fix)
        }
        await sender.client.shutdown()
        return result
    }
}
