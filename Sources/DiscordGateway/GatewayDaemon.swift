import DiscordREST
import Foundation
import Logging
import ServiceLifecycle
@_exported import ThreadDeskSettings
import ThreadDeskTracing

/// `threaddesk gateway`'s settings, read from the environment and checked the way the server's
/// are: every missing or malformed variable named in one message (the command exits 78).
public struct GatewayDaemonConfiguration: Sendable {
    public var discordToken: String
    /// The support forums: `DISCORD_FORUM_CHANNEL_ID`, or every app's of `APPS_FILE` (the
    /// server's file: one connection serves every app).
    public var forumChannelIDs: Set<String>
    /// `DISCORD_FAQ_CHANNEL_ID`, or every app's `faqChannelID` of `APPS_FILE`: the FAQ forums,
    /// whose posts are forwarded too.
    public var faqChannelIDs: Set<String> = []
    public var discordAPIURL = "https://discord.com/api/v10"
    public var serverURL: String
    public var gatewaySecret: String
    public var logLevel: Logger.Level = .info
    /// This process's share of the bot's global 50 requests per second (`DISCORD_GLOBAL_LIMIT`).
    public var discordGlobalLimit = 50
    /// `GATEWAY_COMPRESSION`: `zlib-stream` (default), `zstd-stream` or `none`.
    public var compression = TransportCompression.zlibStream
    /// Spans of the events it forwards (`TRACING=otlp`): the server's spans of each batch are its children.
    public var tracing = TracingSettings()
    /// The same floor the server holds `GATEWAY_SECRET` to.
    public static let minimumSecretLength = 32

    /// What keeps `threaddesk gateway` from starting: every missing and malformed variable.
    public typealias Problem = ConfigurationProblem

    public init(discordToken: String, forumChannelID: String, serverURL: String, gatewaySecret: String) {
        self.discordToken = discordToken
        self.forumChannelIDs = [forumChannelID]
        self.serverURL = serverURL
        self.gatewaySecret = gatewaySecret
    }

    public init(environment: [String: String]) throws(Problem) {
        var problem = Problem(program: "threaddesk gateway", missing: [], invalid: [])
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        func required(_ name: String) -> String {
            guard let text = value(name) else {
                problem.missing.append(name)
                return ""
            }
            return text
        }
        discordToken = required("DISCORD_TOKEN")
        if let file = value("APPS_FILE") {
            (forumChannelIDs, faqChannelIDs) = Self.forums(inAppsFile: file, problem: &problem)
        } else {
            let forum = required("DISCORD_FORUM_CHANNEL_ID")
            forumChannelIDs = [forum]
            if !forum.isEmpty, !forum.allSatisfy({ $0.isASCII && $0.isNumber }) {
                problem.invalid.append("DISCORD_FORUM_CHANNEL_ID (a Discord id, digits only)")
            }
        }
        serverURL = required("SERVER_URL")
        gatewaySecret = required("GATEWAY_SECRET")
        if !serverURL.isEmpty, !(serverURL.hasPrefix("http://") || serverURL.hasPrefix("https://")) {
            problem.invalid.append("SERVER_URL (http:// or https://)")
        }
        if !gatewaySecret.isEmpty, gatewaySecret.utf8.count < Self.minimumSecretLength {
            problem.invalid.append("GATEWAY_SECRET (at least \(Self.minimumSecretLength) characters)")
        }
        if let url = value("DISCORD_API_URL") { discordAPIURL = url }
        if let faq = value("DISCORD_FAQ_CHANNEL_ID") {
            if faq.allSatisfy({ $0.isASCII && $0.isNumber }) { faqChannelIDs = [faq] } else { problem.invalid.append("DISCORD_FAQ_CHANNEL_ID (a Discord id, digits only)") }
        }
        if let text = value("DISCORD_GLOBAL_LIMIT") {
            if let limit = Int(text), (1...50).contains(limit) {
                discordGlobalLimit = limit
            } else {
                problem.invalid.append("DISCORD_GLOBAL_LIMIT (requests per second, 1 to 50)")
            }
        }
        compression = TransportCompression.setting(value("GATEWAY_COMPRESSION"), problem: &problem)
        if let level = value("LOG_LEVEL") {
            if let parsed = Logger.Level(rawValue: level.lowercased()) { logLevel = parsed } else { problem.invalid.append("LOG_LEVEL") }
        }
        tracing = TracingSettings(environment: environment, problems: &problem.invalid)
        if !problem.missing.isEmpty || !problem.invalid.isEmpty { throw problem }
    }

    /// Every app's `forumChannelID`, and `faqChannelID` where it has one, in the apps file (the
    /// server checks the rest of it).
    static func forums(inAppsFile path: String, problem: inout Problem) -> (support: Set<String>, faq: Set<String>) {
        guard let data = FileManager.default.contents(atPath: path),
            let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let apps = root["apps"] as? [[String: Any]]
        else {
            problem.invalid.append("APPS_FILE (unreadable, or not {\"apps\": [ … ]})")
            return ([], [])
        }
        let forums = apps.compactMap { $0["forumChannelID"] as? String }
        guard !forums.isEmpty, forums.count == apps.count, forums.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } && UInt64($0) != nil }) else {
            problem.invalid.append("APPS_FILE (every app's forumChannelID, a Discord id)")
            return ([], [])
        }
        let faqs = apps.compactMap { $0["faqChannelID"] as? String }
        guard faqs.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } && UInt64($0) != nil }) else {
            problem.invalid.append("APPS_FILE (an app's faqChannelID, a Discord id)")
            return ([], [])
        }
        return (Set(forums), Set(faqs))
    }
}

/// The daemon's parts, wired as `threaddesk gateway` runs them (its tests start the same): the
/// forwarder to the server, and the gateway connection feeding it. `adjust` lets a test shorten
/// backoffs or give the forwarder a clock it drives.
public struct GatewayDaemonServices: Sendable {
    public let forwarder: HTTPEventForwarder
    public let connection: GatewayConnection
    /// Sends the spans (tracing on); stops last, with what the others' last work left.
    public let traceExporter: (any Service)?

    /// In the order a `ServiceGroup` should start them (it shuts them down in reverse: the
    /// connection first, so events already read still reach the forwarder).
    public var services: [any Service] { (traceExporter.map { [$0] } ?? []) + [forwarder, connection] }
}

public func buildGatewayServices(
    configuration: GatewayDaemonConfiguration, logger: Logger,
    forwarderClock: any Clock<Duration> = ContinuousClock(),
    adjust: (inout HTTPEventForwarder.Configuration, inout GatewayConnection.Configuration) -> Void = { _, _ in }
) -> GatewayDaemonServices {
    var forwarding = HTTPEventForwarder.Configuration(serverURL: configuration.serverURL, secret: configuration.gatewaySecret)
    var gateway = GatewayConnection.Configuration(
        token: configuration.discordToken, forumChannelIDs: configuration.forumChannelIDs, discordAPIURL: configuration.discordAPIURL)
    gateway.compression = configuration.compression
    gateway.faqChannelIDs = configuration.faqChannelIDs
    adjust(&forwarding, &gateway)
    let traces: Traces
    let exporter: (any Service)?
    do {
        (traces, exporter) = try configuration.tracing.makeTraces(serviceName: "threaddesk-gateway", logger: logger)
    } catch {
        logger.error("Tracing could not start; it is off", metadata: ["error": "\(error)"])
        (traces, exporter) = (.off, nil)
    }
    let forwarder = HTTPEventForwarder(configuration: forwarding, clock: forwarderClock, traces: traces, logger: logger)
    var rest = DiscordClient<AnyClock>.Configuration(baseURL: gateway.discordAPIURL, token: gateway.token)
    rest.rateLimits.globalLimit = configuration.discordGlobalLimit
    let discord = DiscordClient(configuration: rest, logger: logger)
    return GatewayDaemonServices(
        forwarder: forwarder, connection: GatewayConnection(configuration: gateway, sink: forwarder, discord: discord, logger: logger),
        traceExporter: exporter)
}

extension GatewayDaemonConfiguration: CustomReflectable {
    public var customMirror: Mirror {
        Mirror(self, children: ["discordToken": "<redacted>", "gatewaySecret": "<redacted>", "forumChannelIDs": forumChannelIDs.sorted(), "serverURL": serverURL])
    }
}

/// Runs the daemon as both `threaddesk gateway` and `threaddesk-gateway` do: settings from
/// `environment` (exit status 78 naming every problem), then the services until SIGTERM/SIGINT
/// (0) or until the gateway stops for good (1, after one line saying why).
public func runGatewayDaemon(environment: [String: String]) async throws -> Int32 {
    let settings: GatewayDaemonConfiguration
    do {
        settings = try GatewayDaemonConfiguration(environment: environment)
    } catch {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        return 78
    }
    var logger = Logger(label: "threaddesk.gateway")
    logger.logLevel = settings.logLevel
    let daemon = buildGatewayServices(configuration: settings, logger: logger)
    // Events already read get the connection's drain time to reach the server, then stop.
    let group = buildServiceGroup(daemon.services, grace: .seconds(10), cancelGrace: .seconds(5), logger: logger)
    do {
        try await group.run()
        return 0
    } catch let error as GatewayFatalError {
        FileHandle.standardError.write(Data("threaddesk gateway stopped: \(error)\n".utf8))
        return 1
    }
}
