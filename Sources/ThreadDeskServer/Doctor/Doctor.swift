import APNs
import DiscordREST
import Foundation
import Logging

/// `threaddesk doctor`: checks a deployment's configuration against the real services — Discord
/// (token, intents, guild, forum, the bot's permissions there), APNs, the store, the listeners —
/// and says, for each check, what is wrong and what to do. Never prints a secret.
public struct Doctor: Sendable {
    public struct Options: Sendable {
        /// A device token to send one test notification to (`--push-to`).
        public var pushTo: String?
        /// The push environment of `pushTo` (default: `APNS_ENVIRONMENT`).
        public var pushEnvironment: APNsEnvironment?
        /// How long the gateway identify may take, from connecting to READY or a close.
        public var identifyTimeout: Duration = .seconds(20)
        /// How long the store may take to answer.
        public var storeTimeout: Duration = .seconds(10)

        public init(pushTo: String? = nil, pushEnvironment: APNsEnvironment? = nil) {
            self.pushTo = pushTo
            self.pushEnvironment = pushEnvironment
        }
    }

    public let configuration: ServerConfiguration
    public let options: Options
    let logger: Logger

    public init(configuration: ServerConfiguration, options: Options = Options(), logger: Logger) {
        self.configuration = configuration
        self.options = options
        self.logger = logger
    }

    /// Reads the configuration as `serve` does; when it cannot be read, that is the one failed check.
    public static func report(environment: [String: String], options: Options = Options(), logger: Logger) async -> DoctorReport {
        do {
            let configuration = try ServerConfiguration(environment: environment)
            return await Doctor(configuration: configuration, options: options, logger: logger).run()
        } catch {
            return DoctorReport(checks: [
                DoctorCheck(
                    "configuration", failed: "\(error)",
                    fix: "set the variables named (see .env.example); `threaddesk serve` would stop at the same place")
            ])
        }
    }

    /// Every check, in the order a person setting up would fix them.
    public func run() async -> DoctorReport {
        var checks: [DoctorCheck] = [DoctorCheck("configuration", passed: "read; every variable well-formed")]
        checks += await discordChecks()
        checks += await apnsChecks()
        checks += attestChecks()
        checks += await assistChecks()
        checks += crashChecks()
        checks += await webhookChecks()
        checks += await storeChecks()
        checks += listenerChecks()
        checks += secretChecks()
        return DoctorReport(checks: checks)
    }
}

/// One check's outcome: what was found, and for a failure what to do.
public struct DoctorCheck: Sendable, Codable, Equatable {
    public var name: String
    public var passed: Bool
    public var detail: String
    public var fix: String?
    /// Passed, yet worth a look (a set-up that works and may expose something): `!` in the text.
    public var warning: Bool?

    public init(_ name: String, passed detail: String) {
        self.name = name
        self.passed = true
        self.detail = detail
    }

    public init(_ name: String, failed detail: String, fix: String) {
        self.name = name
        self.passed = false
        self.detail = detail
        self.fix = fix
    }

    public init(_ name: String, warned detail: String, fix: String) {
        self.init(name, passed: detail)
        self.fix = fix
        warning = true
    }

    /// The same finding, saying which app it is about (a deployment of several apps).
    func naming(_ app: AppSettings) -> DoctorCheck {
        var check = self
        check.detail = "app \(app.id): " + detail
        return check
    }

    /// `✓ name: detail`, `! name: detail → fix` (a warning), or `✗ name: detail → fix`.
    public var line: String {
        warning == true ? "! \(name): \(detail) → \(fix ?? "")" : passed ? "✓ \(name): \(detail)" : "✗ \(name): \(detail) → \(fix ?? "")"
    }
}

public struct DoctorReport: Sendable, Codable, Equatable {
    public var passed: Bool
    public var checks: [DoctorCheck]

    public init(checks: [DoctorCheck]) {
        self.checks = checks
        passed = checks.allSatisfy(\.passed)
    }

    public var failed: [DoctorCheck] { checks.filter { !$0.passed } }

    public func check(_ name: String) -> DoctorCheck? { checks.first { $0.name == name } }

    /// One line per check, then a summary.
    public var text: String {
        let summary = passed ? "All \(checks.count) checks passed." : "\(failed.count) of \(checks.count) checks failed."
        return (checks.map(\.line) + [summary]).joined(separator: "\n")
    }

    public var json: Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)) ?? Data("{\"passed\":false,\"checks\":[]}".utf8)
    }
}
