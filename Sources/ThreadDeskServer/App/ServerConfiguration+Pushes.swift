import APNs
import Foundation

/// The pushes' variables: APNs's credentials and what a push shows.
extension ServerConfiguration {
    /// `APNS_*` (all or none), `PUSH_*` but `PUSH_MAX_AGE_SECONDS` (read with the mirror's).
    mutating func readPushes(_ value: (String) -> String?, problem: inout Problem) {
        // The deployment's topic is the fallback of apps without their own: not needed when each has one.
        let ownTopics = apps.map { apps in apps.compactMap(\.apnsTopic).count == apps.count ? apps.compactMap(\.apnsTopic) : [] } ?? []
        apns = Self.apnsSettings(value, fallbackTopic: ownTopics.first, problem: &problem)
        if let title = value("PUSH_TITLE") { push.title = title }
        if let category = value("PUSH_CATEGORY") { push.category = category }
        if let sound = value("PUSH_SOUND") { push.sound = sound == "none" ? nil : sound }
        if let background = value("PUSH_BACKGROUND") { push.background = ["1", "true", "yes"].contains(background.lowercased()) }
    }

    /// All of the APNs variables, or none of them; `APNS_TOPIC` may be left out when every app of
    /// the apps file names its own topic (`fallbackTopic`, the first of them, is then the client's default).
    private static func apnsSettings(_ value: (String) -> String?, fallbackTopic: String?, problem: inout Problem) -> APNsSettings? {
        let names = ["APNS_KEY_ID", "APNS_TEAM_ID", "APNS_PRIVATE_KEY", "APNS_PRIVATE_KEY_PATH", "APNS_TOPIC"]
        guard names.contains(where: { value($0) != nil }) else { return nil }
        var key = value("APNS_PRIVATE_KEY")
        if key == nil, let path = value("APNS_PRIVATE_KEY_PATH") {
            key = try? String(contentsOfFile: path, encoding: .utf8)
            if key == nil { problem.invalid.append("APNS_PRIVATE_KEY_PATH (unreadable)") }
        }
        var missing: [String] = []
        if value("APNS_KEY_ID") == nil { missing.append("APNS_KEY_ID") }
        if value("APNS_TEAM_ID") == nil { missing.append("APNS_TEAM_ID") }
        let topic = value("APNS_TOPIC") ?? fallbackTopic
        if topic == nil { missing.append("APNS_TOPIC") }
        if key == nil && value("APNS_PRIVATE_KEY_PATH") == nil { missing.append("APNS_PRIVATE_KEY or APNS_PRIVATE_KEY_PATH") }
        problem.missing += missing
        guard missing.isEmpty, let key, let topic else { return nil }
        var settings = APNsSettings(keyID: value("APNS_KEY_ID")!, teamID: value("APNS_TEAM_ID")!, privateKeyPEM: key, topic: topic)
        if let environment = value("APNS_ENVIRONMENT") {
            if let parsed = APNsEnvironment(rawValue: environment) { settings.defaultEnvironment = parsed } else { problem.invalid.append("APNS_ENVIRONMENT (production or development)") }
        }
        settings.url = value("APNS_URL")
        if let caFile = value("APNS_CA_FILE") {
            settings.caCertificatePEM = try? String(contentsOfFile: caFile, encoding: .utf8)
            if settings.caCertificatePEM == nil { problem.invalid.append("APNS_CA_FILE (unreadable)") }
        }
        return settings
    }
}
