import AppAttest
import Foundation

/// App Attest: what the server will accept (the App IDs, the environments, the roots), checked
/// against the rest of the set-up. Nothing here talks to Apple: attestations come from devices.
extension Doctor {
    public func attestChecks(now: Date = Date()) -> [DoctorCheck] {
        let settings = configuration.attest
        guard settings.mode != .off else {
            return [
                DoctorCheck(
                    "attest",
                    passed: "off: any copy of the app opens sessions with the app key, limited per address (APP_ATTEST=optional or required for genuine devices only)")
            ]
        }
        var checks: [DoctorCheck] = []
        let appIDs = settings.appIDs.joined(separator: ", ")
        if let topic = configuration.apns?.topic, !settings.bundleIDs.contains(topic) {
            checks.append(
                DoctorCheck(
                    "attest.app", failed: "APNS_TOPIC \(topic) is not among APP_ATTEST_BUNDLE_IDS (\(settings.bundleIDs.joined(separator: ", ")))",
                    fix: "both name the app's bundle id: correct the one that is wrong, or add the topic to APP_ATTEST_BUNDLE_IDS"))
        } else {
            checks.append(DoctorCheck("attest.app", passed: "\(settings.mode.rawValue), for \(appIDs)"))
        }
        let root = AppAttestVerifier.appleRootValidity
        let until = root.until.formatted(.iso8601.year().month().day())
        if root.from <= now && now < root.until {
            checks.append(DoctorCheck("attest.root", passed: "Apple App Attestation Root CA, valid until \(until)"))
        } else {
            checks.append(
                DoctorCheck(
                    "attest.root", failed: "Apple's App Attestation Root CA shipped in this build is not valid now (until \(until))",
                    fix: "update ThreadDesk: a newer build ships Apple's current root"))
        }
        var environment = settings.environments.map(\.rawValue).sorted().joined(separator: " and ")
        if settings.environments == [.development] {
            environment += " only: App Store and TestFlight builds attest in production and would be refused (right for a development server)"
        }
        if let extra = settings.extraRootPEM.flatMap(AppAttestVerifier.rootName(pem:)) {
            environment += "; a test root is trusted too (\(extra)): never on a server real users reach"
        }
        checks.append(DoctorCheck("attest.environment", passed: environment))
        return checks
    }
}
