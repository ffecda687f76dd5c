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
        if let commands = value("DESK_COMMANDS") {
            switch commands.lowercased() {
            case "on": desk.commands = true
            case "off": desk.commands = false
            default: problem.invalid.append("DESK_COMMANDS (on or off)")
            }
        }
        if let role = value("DESK_ROLE_ID") {
            if UInt64(role) != nil, role.allSatisfy(\.isASCII) { desk.roleID = role } else { problem.invalid.append("DESK_ROLE_ID (a role's id, digits only)") }
        }
        if let permissions = value("DESK_PERMISSIONS") {
            if UInt64(permissions) != nil, permissions.allSatisfy(\.isASCII) {
                desk.permissions = permissions
            } else {
                problem.invalid.append("DESK_PERMISSIONS (a permission bitfield, digits only; 0: only administrators)")
            }
        }
        if let name = value("SUPPORT_NAME") {
            if desk.speakerName(name) == name { desk.teamName = name } else { problem.invalid.append("SUPPORT_NAME (1–80 characters, without \"discord\" or \"clyde\")") }
        }
        if let hours = value("SUPPORT_HOURS") {
            do {
                desk.hours = try SupportHours(hours)
            } catch {
                problem.invalid.append("SUPPORT_HOURS (a time zone and weekly hours: Europe/Berlin Mon-Fri 09:00-17:00; Sat 10:00-14:00)")
            }
        }
        if let message = value("AWAY_MESSAGE") {
            if message.utf16.count <= 1900 { desk.awayMessage = message } else { problem.invalid.append("AWAY_MESSAGE (at most 1900 characters)") }
        }
        if let interval = value("AWAY_MESSAGE_INTERVAL") {
            if let parsed = DeskSettings.interval(interval) { desk.awayInterval = parsed } else { problem.invalid.append("AWAY_MESSAGE_INTERVAL (12h, 30m, 90s or seconds; at most a year)") }
        }
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
        // The deployment's topic is the fallback of apps without their own: not needed when each has one.
        let ownTopics = apps.map { apps in apps.compactMap(\.apnsTopic).count == apps.count ? apps.compactMap(\.apnsTopic) : [] } ?? []
        apns = Self.apnsSettings(value, fallbackTopic: ownTopics.first, problem: &problem)
        if let title = value("PUSH_TITLE") { push.title = title }
        if let category = value("PUSH_CATEGORY") { push.category = category }
        if let sound = value("PUSH_SOUND") { push.sound = sound == "none" ? nil : sound }
        if let background = value("PUSH_BACKGROUND") { push.background = ["1", "true", "yes"].contains(background.lowercased()) }
        func seconds(_ name: String, atLeast minimum: Double) -> Duration? {
            guard let text = value(name) else { return nil }
            guard let number = Double(text), number >= minimum, number <= 3600 else {
                problem.invalid.append("\(name) (seconds, \(minimum.formatted()) to 3600)")
                return nil
            }
            return .milliseconds(Int64(number * 1000))
        }
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
        for (name, keyPath) in QuotaSettings.variables {
            guard let text = value(name) else { continue }
            if let limit = QuotaSettings.parse(text) { quotas[keyPath: keyPath] = limit } else { problem.invalid.append("\(name) (count/seconds, or 0)") }
        }
        if let proxies = value("TRUSTED_PROXIES") {
            trustedProxies = Set(proxies.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
            let unreadable = trustedProxies.filter { IPNetwork($0) == nil }.sorted()
            if !unreadable.isEmpty {
                problem.invalid.append("TRUSTED_PROXIES (addresses or networks such as 10.0.0.0/8 or fd00::/8; not: \(unreadable.joined(separator: ", ")))")
            }
        }
        if let prefix = value("QUOTA_IPV6_PREFIX") {
            if let bits = Int(prefix), (16...128).contains(bits) { quotaIPv6PrefixBits = bits } else { problem.invalid.append("QUOTA_IPV6_PREFIX (16 to 128)") }
        }
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
        if let keepAlive = seconds("LIVE_KEEPALIVE_SECONDS", atLeast: 0.05) { live.keepAlive = keepAlive }
        if let timeout = seconds("LIVE_WRITE_TIMEOUT_SECONDS", atLeast: 0.1) { live.writeTimeout = timeout }
        if let duration = seconds("LIVE_MAX_STREAM_SECONDS", atLeast: 1) { live.maxStreamDuration = duration }
        if let text = value("LIVE_MAX_STREAMS") {
            if let count = Int(text), count >= 1 { live.maxStreams = count } else { problem.invalid.append("LIVE_MAX_STREAMS (1 or more)") }
        }
        if let text = value("LIVE_OPENING_AT_ONCE") {
            if text == "off" {
                live.openingAtOnce = nil
            } else if let count = Int(text), count >= 1 {
                live.openingAtOnce = count
            } else {
                problem.invalid.append("LIVE_OPENING_AT_ONCE (1 or more, or off)")
            }
        }
        if let text = value("LIVE_OPENING_QUEUE") {
            if let count = Int(text), count >= 0 { live.openingQueue = count } else { problem.invalid.append("LIVE_OPENING_QUEUE (0 or more)") }
        }
        if let text = value("LIVE_STREAMS_PER_ADDRESS") {
            if let count = Int(text), count >= 1 { live.streamsPerAddress = count } else { problem.invalid.append("LIVE_STREAMS_PER_ADDRESS (1 or more)") }
        }
        if let interval = seconds("TYPING_INTERVAL_SECONDS", atLeast: 1) { live.typingInterval = interval }
        if let emoji = value("READ_RECEIPT_EMOJI") {
            if emoji == "none" {
                live.readReceiptEmoji = nil
            } else if emoji.count == 1, emoji.unicodeScalars.contains(where: { $0.properties.isEmoji && $0.value > 0xFF }) {
                live.readReceiptEmoji = emoji
            } else {
                problem.invalid.append("READ_RECEIPT_EMOJI (one emoji, or none)")
            }
        }
        if let delay = seconds("READ_RECEIPT_DELAY_SECONDS", atLeast: 0.05) { live.readReceiptDelay = delay }
        func mebibytes(_ name: String) -> Int? {
            guard let text = value(name) else { return nil }
            guard let number = Int(text), (1...500).contains(number) else {
                problem.invalid.append("\(name) (MiB, 1 to 500)")
                return nil
            }
            return number * 1024 * 1024
        }
        if let bytes = mebibytes("ATTACHMENT_MAX_MIB") { attachments.maxFileBytes = bytes }
        if let text = value("OUTBOX_MAX_MIB") {
            if let number = Int(text), (1...1_048_576).contains(number) { outbox.maxBytes = number * 1024 * 1024 } else { problem.invalid.append("OUTBOX_MAX_MIB (1 to 1048576)") }
        }
        if let bytes = mebibytes("OUTBOX_USER_MAX_MIB") { outbox.maxBytesPerUser = bytes }
        if let text = value("OUTBOX_FAILED_KEEP_DAYS") {
            if let days = Int(text), (1...3650).contains(days) { outbox.failedKeep = .seconds(days * 86_400) } else { problem.invalid.append("OUTBOX_FAILED_KEEP_DAYS (1 to 3650)") }
        }
        if let text = value("OUTBOX_USER_MAX_MESSAGES") {
            if let count = Int(text), (1...100_000).contains(count) { outbox.maxMessagesPerUser = count } else { problem.invalid.append("OUTBOX_USER_MAX_MESSAGES (1 to 100000)") }
        }
        if let bytes = mebibytes("ATTACHMENT_MAX_TOTAL_MIB") { attachments.maxTotalBytes = bytes }
        if let types = value("ATTACHMENT_TYPES") {
            let list = types.split(separator: ",").map { AttachmentRules.mediaType(String($0)) }.filter { !$0.isEmpty }
            if !list.isEmpty, list.allSatisfy({ $0.split(separator: "/").count == 2 }) {
                attachments.allowedTypes = list
            } else {
                problem.invalid.append("ATTACHMENT_TYPES (media types separated by commas, e.g. image/png,image/*)")
            }
        }
        privacy.read(value, problem: &problem)
        assist.read(value, problem: &problem)
        problem.invalid += assist.problems(for: catalog.apps, single: apps == nil)
        problem.invalid += catalog.shareProblems(threadsTotal: quotas.threadsTotal, maxStreams: live.maxStreams)
        sessions.read(value, problem: &problem)
        attest.read(value, problem: &problem)
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
        tracing = TracingSettings(environment: environment, problems: &problem.invalid)
        if !problem.missing.isEmpty || !problem.invalid.isEmpty { throw problem }
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
