import AppAttest
import Foundation
import ThreadDeskSettings

/// App Attest: whether sessions must come from a genuine copy of the app on an Apple device
/// (`APP_ATTEST`), and which app that is.
public struct AppAttestSettings: Sendable {
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// No attestation asked or checked.
        case off
        /// Attested devices get per-device limits; others are served with tighter per-address ones.
        case optional
        /// Sessions need an attestation (or an assertion by an attested key).
        case required
    }

    public var mode = Mode.off
    /// `APP_ATTEST_TEAM_ID`: the team id the App IDs start with.
    public var teamID = ""
    /// `APP_ATTEST_BUNDLE_IDS`: one or more, comma-separated.
    public var bundleIDs: [String] = []
    /// `APP_ATTEST_ENVIRONMENT`: `production` or `development`; both when unset.
    public var environments = Set(AppAttestVerifier.Environment.allCases)
    /// `APP_ATTEST_EXTRA_ROOT` (PEM text or a file): another trusted root, for tests and the sandbox
    /// only; accepted only with `APP_ATTEST_ENVIRONMENT=development` set explicitly.
    public var extraRootPEM: String?
    /// How long a challenge may be used.
    public var challengeLifetime: Duration = .seconds(300)
    /// `APP_ATTEST_FORGET_DAYS`: a device's key not used this long is forgotten (the device attests
    /// anew when it comes back; the SDK does so by itself); nil (`off`): kept for good.
    public var forgetKeysAfter: Duration? = .seconds(Self.defaultForgetDays * 86_400)
    public static let defaultForgetDays = 365
    static let maximumForgetDays = 36_500

    public init() {}

    public var appIDs: [String] { appIDs(bundleIDs: nil) }

    /// The App IDs of an app whose own bundle ids are `bundleIDs` (nil: `APP_ATTEST_BUNDLE_IDS`).
    public func appIDs(bundleIDs own: [String]?) -> [String] { (own ?? bundleIDs).map { "\(teamID).\($0)" } }

    /// Whether `id` is a bundle id as Apple writes them (what `APP_ATTEST_BUNDLE_IDS` lists).
    static func isBundleID(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 155 && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-.".contains($0)) }
    }

    /// Reads the `APP_ATTEST_*` variables, adding what is missing or wrong to `problem`.
    mutating func read(_ value: (String) -> String?, problem: inout ConfigurationProblem) {
        if let text = value("APP_ATTEST") {
            if let parsed = Mode(rawValue: text.lowercased()) { mode = parsed } else { problem.invalid.append("APP_ATTEST (off, optional or required)") }
        }
        if let team = value("APP_ATTEST_TEAM_ID") {
            if team.count == 10, team.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) {
                teamID = team
            } else {
                problem.invalid.append("APP_ATTEST_TEAM_ID (the 10-character Apple team id)")
            }
        }
        if let list = value("APP_ATTEST_BUNDLE_IDS") {
            bundleIDs = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            if bundleIDs.isEmpty || bundleIDs.contains(where: { $0.count > 155 || $0.contains { !($0.isASCII && ($0.isLetter || $0.isNumber || "-.".contains($0))) } }) {
                problem.invalid.append("APP_ATTEST_BUNDLE_IDS (bundle ids such as com.example.app, comma-separated)")
            }
        }
        if let environment = value("APP_ATTEST_ENVIRONMENT") {
            if let parsed = AppAttestVerifier.Environment(rawValue: environment.lowercased()) {
                environments = [parsed]
            } else {
                problem.invalid.append("APP_ATTEST_ENVIRONMENT (production or development)")
            }
        }
        if let root = value("APP_ATTEST_EXTRA_ROOT") {
            let pem = root.contains("-----BEGIN") ? root : try? String(contentsOfFile: root, encoding: .utf8)
            // Not with production, nor with the environment unset (which accepts production keys):
            // a test root must never stand beside Apple's where real devices attest.
            if value("APP_ATTEST_ENVIRONMENT")?.lowercased() != "development" {
                problem.invalid.append(
                    "APP_ATTEST_EXTRA_ROOT (only with APP_ATTEST_ENVIRONMENT=development set explicitly: a test root must never attest production keys)")
            } else if let pem, AppAttestVerifier.isCertificate(pem: pem) {
                extraRootPEM = pem
            } else {
                problem.invalid.append("APP_ATTEST_EXTRA_ROOT (a PEM certificate, or the path of one)")
            }
        }
        if let days = problem.days(
            value("APP_ATTEST_FORGET_DAYS"), name: "APP_ATTEST_FORGET_DAYS", maximum: Self.maximumForgetDays)
        {
            forgetKeysAfter = days
        }
        if mode != .off {
            if teamID.isEmpty && value("APP_ATTEST_TEAM_ID") == nil { problem.missing.append("APP_ATTEST_TEAM_ID") }
            if bundleIDs.isEmpty && value("APP_ATTEST_BUNDLE_IDS") == nil { problem.missing.append("APP_ATTEST_BUNDLE_IDS") }
        }
    }
}
