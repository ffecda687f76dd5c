import APNs
import DiscordGateway
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskSettings
import ThreadDeskTracing

/// Reading the configuration from the environment: every variable checked, every problem named.
extension ServerConfiguration {
    /// What keeps `threaddesk serve` from starting: every missing and malformed variable.
    public typealias Problem = ConfigurationProblem

    /// The shortest `GATEWAY_SECRET` and `IDENTITY_SECRET` accepted: the first is all that
    /// stands between the internet and the route that feeds the server gateway events; the
    /// second signs every user id, and a short one is found from one id and its `userHash`.
    public static let minimumSecretLength = 32

    /// Reads every variable at once, so one message names everything that is missing or wrong.
    public init(environment: [String: String]) throws(Problem) {
        func value(_ name: String) -> String? {
            environment[name].flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
        }
        var problem = Problem(missing: [], invalid: [])
        func required(_ name: String) -> String {
            guard let found = value(name) else {
                problem.missing.append(name)
                return ""
            }
            return found
        }
        func snowflake(_ name: String) -> String {
            let found = required(name)
            if !found.isEmpty && !(found.allSatisfy { $0.isASCII && $0.isNumber } && UInt64(found) != nil) {
                problem.invalid.append("\(name) (a Discord id, digits only)")
            }
            return found
        }
        let appsFile = value("APPS_FILE")
        if appsFile != nil {
            // Each app's own settings are in the file; the same variable beside it would leave
            // unsaid which app it is for.
            let perApp = [
                "APP_KEY", "DISCORD_FORUM_CHANNEL_ID", "DISCORD_DEFAULT_TAG_ID", "DISCORD_FAQ_CHANNEL_ID", "IDENTITY_SECRET", "LEGACY_API_KEY",
                "SUPPORT_HOURS", "AWAY_MESSAGE",
            ]
            for name in perApp where value(name) != nil { problem.invalid.append("\(name) (set per app in APPS_FILE)") }
        }
        let guild = appsFile == nil ? snowflake("DISCORD_GUILD_ID") : value("DISCORD_GUILD_ID") ?? ""
        if appsFile != nil, !guild.isEmpty, !(guild.allSatisfy { $0.isASCII && $0.isNumber } && UInt64(guild) != nil) {
            problem.invalid.append("DISCORD_GUILD_ID (a Discord id, digits only)")
        }
        self.init(
            discordToken: required("DISCORD_TOKEN"), guildID: guild,
            forumChannelID: appsFile == nil ? snowflake("DISCORD_FORUM_CHANNEL_ID") : "", appKey: appsFile == nil ? required("APP_KEY") : "")
        if let appsFile {
            do {
                let apps = try AppsFile.read(path: appsFile, guildID: guild.isEmpty ? nil : guild)
                self.apps = apps
                // The first app stands for the deployment where one forum or guild is asked for
                // (the doctor's gateway check).
                (guildID, forumChannelID, appKey) = (apps[0].guildID, apps[0].forumChannelID, apps[0].appKey)
            } catch {
                problem.invalid += error.invalid
            }
        }
        if let url = value("DISCORD_API_URL") { discordAPIURL = url }
        defaultTagID = value("DISCORD_DEFAULT_TAG_ID")
        if let faq = value("DISCORD_FAQ_CHANNEL_ID") {
            if faq.allSatisfy({ $0.isASCII && $0.isNumber }), UInt64(faq) != nil {
                faqChannelID = faq
            } else {
                problem.invalid.append("DISCORD_FAQ_CHANNEL_ID (a Discord id, digits only)")
            }
        }
        if let names = value("STATUS_TAGS") {
            if names.lowercased() == "off" {
                statusTags = nil
            } else if let parsed = StatusTagNames(list: names) {
                statusTags = parsed
            } else {
                problem.invalid.append("STATUS_TAGS (three different comma-separated names of 1–20 characters, or off)")
            }
        }
        readDesk(value, problem: &problem)
        identitySecret = value("IDENTITY_SECRET")
        if let secret = identitySecret, secret.utf8.count < Self.minimumSecretLength {
            problem.invalid.append("IDENTITY_SECRET (at least \(Self.minimumSecretLength) characters: it signs every user id)")
        }
        legacyAPIKey = value("LEGACY_API_KEY")
        gatewaySecret = value("GATEWAY_SECRET")
        if let secret = gatewaySecret, secret.utf8.count < Self.minimumSecretLength {
            problem.invalid.append("GATEWAY_SECRET (at least \(Self.minimumSecretLength) characters: it guards the internal route)")
        }
        metricsToken = value("METRICS_TOKEN")
        if let token = metricsToken, token.utf8.count < Self.minimumSecretLength || !token.utf8.allSatisfy({ (0x21..<0x7F).contains($0) }) {
            problem.invalid.append("METRICS_TOKEN (at least \(Self.minimumSecretLength) visible ASCII characters: it guards every app's figures)")
        }
        if let store = value("STORE_URL") { storeURL = store }
        if let host = value("HOST") { self.host = host }
        if let port = value("PORT") {
            if let number = Int(port), (0...65535).contains(number) { self.port = number } else { problem.invalid.append("PORT") }
        }
        if let port = value("INTERNAL_PORT") {
            if let number = Int(port), (0...65535).contains(number) { internalPort = number } else { problem.invalid.append("INTERNAL_PORT") }
        }
        if let host = value("INTERNAL_HOST") { internalHost = host }
        if let text = value("DISCORD_GLOBAL_LIMIT") {
            if let limit = Int(text), (1...50).contains(limit) {
                discordGlobalLimit = limit
            } else {
                problem.invalid.append("DISCORD_GLOBAL_LIMIT (requests per second, 1 to 50: this replica's share of the bot's 50)")
            }
        }
        if let text = value("DISCORD_SHARED_TURN_LATENESS_MS") {
            if let milliseconds = Int(text), (0...5000).contains(milliseconds) {
                discordSharedTurnLateness = .milliseconds(milliseconds)
            } else {
                problem.invalid.append("DISCORD_SHARED_TURN_LATENESS_MS (0 to 5000)")
            }
        }
        gatewayCompression = TransportCompression.setting(value("GATEWAY_COMPRESSION"), problem: &problem)
        if let level = value("LOG_LEVEL") {
            if let parsed = Logger.Level(rawValue: level.lowercased()) { logLevel = parsed } else { problem.invalid.append("LOG_LEVEL") }
        }
        readPushes(value, problem: &problem)
        func seconds(_ name: String, atLeast minimum: Double) -> Duration? { problem.seconds(name, atLeast: minimum, in: value) }
        if let timeout = seconds("REQUEST_TIMEOUT_SECONDS", atLeast: 1) { requestTimeout = timeout }
        if let grace = seconds("SHUTDOWN_GRACE_SECONDS", atLeast: 0) { shutdownGrace = grace }
        if let hours = value("IDEMPOTENCY_RETENTION_HOURS") {
            if let count = Int(hours), (1...8760).contains(count) {
                idempotencyRetention = .seconds(count * 3600)
            } else {
                problem.invalid.append("IDEMPOTENCY_RETENTION_HOURS (1 to 8760)")
            }
        }
        debugWaitThreshold = seconds("DEBUG_WAIT_SECONDS", atLeast: 0.1)
        if let idle = seconds("IDLE_TIMEOUT_SECONDS", atLeast: 1) { idleTimeout = idle }
        readLimits(value, problem: &problem)
        if let text = value("RECONCILE_THREADS_PER_SECOND") {
            if let count = Int(text), count >= 1 { mirror.reconcileThreadsPerSecond = count } else { problem.invalid.append("RECONCILE_THREADS_PER_SECOND (1 or more)") }
        }
        if let interval = value("RECONCILE_INTERVAL_SECONDS") {
            if let seconds = Int(interval), seconds >= 10 { mirror.reconcileInterval = .seconds(seconds) } else { problem.invalid.append("RECONCILE_INTERVAL_SECONDS (10 or more)") }
        }
        if let stale = seconds("FEED_STALE_SECONDS", atLeast: 5) { mirror.feedStaleAfter = stale }
        if let age = value("PUSH_MAX_AGE_SECONDS") {
            if let seconds = Int(age), seconds >= 60 { push.maxAge = .seconds(seconds) } else { problem.invalid.append("PUSH_MAX_AGE_SECONDS (60 or more)") }
        }
        readLive(value, problem: &problem)
        readFiles(value, problem: &problem)
        crashes.read(value, problem: &problem)
        readWebhooks(value, problem: &problem)
        lifecycle.read(value, problem: &problem)
        privacy.read(value, problem: &problem)
        assist.read(value, problem: &problem)
        problem.invalid += assist.problems(for: catalog.apps, single: apps == nil)
        problem.invalid += catalog.shareProblems(threadsTotal: quotas.threadsTotal, maxStreams: live.maxStreams)
        sessions.read(value, problem: &problem)
        attest.read(value, problem: &problem)
        checkAppAttest(problem: &problem)
        tracing = TracingSettings(environment: environment, problems: &problem.invalid)
        if !problem.missing.isEmpty || !problem.invalid.isEmpty { throw problem }
    }

    /// App Attest against the apps file and the legacy routes: each app its own bundle ids, none
    /// shared, and no legacy key where attestation is required.
    private func checkAppAttest(problem: inout Problem) {
        if let apps, attest.mode != .off {
            // Each app's attestations carry its own bundle ids: with several apps, each names them.
            if apps.allSatisfy({ $0.attestBundleIDs != nil }) { problem.missing.removeAll { $0 == "APP_ATTEST_BUNDLE_IDS" } }
            if apps.count > 1 {
                for app in apps where app.attestBundleIDs == nil {
                    problem.invalid.append("APPS_FILE app \"\(app.id)\": appAttest.bundleIDs (each app names its own when APP_ATTEST is on)")
                }
                var owners: [String: AppID] = [:]
                for app in apps {
                    for bundle in app.attestBundleIDs ?? [] {
                        if let first = owners[bundle] {
                            problem.invalid.append("APPS_FILE: apps \"\(first)\" and \"\(app.id)\" both attest \(bundle)")
                        }
                        owners[bundle] = app.id
                    }
                }
            }
        }
        if attest.mode == .required, legacyAPIKey != nil || apps?.contains(where: { $0.legacyAPIKey != nil }) == true {
            // The legacy routes take a shared key and any user id: a way around App Attest.
            problem.invalid.append("LEGACY_API_KEY (not with APP_ATTEST=required: the legacy routes cannot be attested)")
        }
    }
}

extension ConfigurationProblem {
    /// The variable `name`: seconds from `minimum` to 3600; nil when unset or invalid (then named here).
    mutating func seconds(_ name: String, atLeast minimum: Double, in value: (String) -> String?) -> Duration? {
        guard let text = value(name) else { return nil }
        guard let number = Double(text), number >= minimum, number <= 3600 else {
            invalid.append("\(name) (seconds, \(minimum.formatted()) to 3600)")
            return nil
        }
        return .milliseconds(Int64(number * 1000))
    }

    /// The variable `name`: MiB from 1 to 500, in bytes; nil when unset or invalid (then named here).
    mutating func mebibytes(_ name: String, in value: (String) -> String?) -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), (1...500).contains(number) else {
            invalid.append("\(name) (MiB, 1 to 500)")
            return nil
        }
        return number * 1024 * 1024
    }
}
