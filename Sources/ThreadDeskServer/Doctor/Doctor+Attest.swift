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
        // Each app's bundle ids (its own, or APP_ATTEST_BUNDLE_IDS) must name its APNs topic.
        let catalog = configuration.catalog
        var mismatches: [String] = []
        for app in catalog.apps {
            let bundles = app.attestBundleIDs ?? settings.bundleIDs
            if let topic = app.apnsTopic ?? configuration.apns?.topic, !bundles.contains(topic) {
                let whose = catalog.isShared ? "app \(app.id): its APNs topic" : "APNS_TOPIC"
                mismatches.append("\(whose) \(topic) is not among \(catalog.isShared ? "its App Attest bundle ids" : "APP_ATTEST_BUNDLE_IDS") (\(bundles.joined(separator: ", ")))")
            }
        }
        if !mismatches.isEmpty {
            checks.append(
                DoctorCheck(
                    "attest.app", failed: mismatches.joined(separator: "; "),
                    fix: "both name the app's bundle id: correct the one that is wrong, or add the topic to the app's bundle ids"))
        } else {
            let appIDs = catalog.apps.flatMap { settings.appIDs(bundleIDs: $0.attestBundleIDs) }.joined(separator: ", ")
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
