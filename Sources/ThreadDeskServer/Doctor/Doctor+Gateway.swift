import Deadlines
import DiscordGateway
import DiscordREST
import Logging

/// A real identify with ThreadDesk's intents, through the gateway connection `serve` uses: READY
/// passes, a close Discord means for good (4014: the Message Content intent) fails, and nothing
/// within `identifyTimeout` fails too.
extension Doctor {
    func gatewayCheck(_ discord: DiscordClient<AnyClock>) async -> DoctorCheck {
        var settings = GatewayConnection.Configuration(
            token: configuration.discordToken, forumChannelID: configuration.forumChannelID, discordAPIURL: configuration.discordAPIURL)
        settings.compression = configuration.gatewayCompression
        let ready = WakeSignal()
        var quiet = logger
        quiet.logLevel = .critical
        let connection = GatewayConnection(configuration: settings, sink: ReadySink(ready: ready), discord: discord, logger: quiet)
        enum Outcome: Sendable {
            case ready
            case fatal(String)
            case ended(String)
            case timedOut
        }
        let timeout = options.identifyTimeout
        let outcome = await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                do {
                    try await connection.run()
                    return .ended("the connection ended")
                } catch let error as GatewayFatalError {
                    return .fatal(error.description)
                } catch {
                    return .ended("\(error)")
                }
            }
            group.addTask { await ready.wait(upTo: timeout) ? .ready : .timedOut }
            let first = await group.next() ?? .timedOut
            group.cancelAll()
            return first
        }
        switch outcome {
        case .ready:
            return DoctorCheck("discord.gateway", passed: "identified with intents \(settings.intents) (READY)")
        case .fatal(let message) where message.contains("4014"):
            return DoctorCheck("discord.gateway", failed: "Discord closed the identify with 4014 (disallowed intents)", fix: Self.intentFix)
        case .fatal(let message):
            return DoctorCheck("discord.gateway", failed: "Discord closed the gateway: \(message)", fix: "see the message; check DISCORD_TOKEN")
        case .ended(let message):
            return DoctorCheck("discord.gateway", failed: "the gateway stopped before READY (\(message))", fix: "check the network to Discord's gateway")
        case .timedOut:
            return DoctorCheck(
                "discord.gateway", failed: "no READY within \(timeout)",
                fix: "check that this machine reaches Discord's gateway (wss) and that the session start limit is not spent")
        }
    }
}

/// Wakes the doctor at READY (the connection hands `.alive` over when a session starts).
private struct ReadySink: ForumEventSink {
    let ready: WakeSignal

    func deliver(_ events: [ForumEvent]) async {
        if events.contains(where: { if case .alive = $0 { true } else { false } }) { ready.signal() }
    }
}
