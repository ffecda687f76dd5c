import DiscordREST
import Deadlines
import Synchronization
import Foundation

extension DiscordWorld {
    /// Registers a new WebSocket connection and queues HELLO on it.
    func openGatewayConnection(onResumeURL: Bool, compression: GatewayCompression = .none) -> (id: UUID, frames: AsyncStream<GatewayFrame>) {
        let (frames, outbound) = AsyncStream.makeStream(of: GatewayFrame.self)
        let id = UUID()
        state.withLock { state in
            state.counters.gatewayConnections += 1
            switch compression {
            case .none: break
            case .zlibStream: state.counters.compressedGatewayConnections += 1
            case .zstdStream: state.counters.zstdGatewayConnections += 1
            }
            state.gateway.connections[id] = .init(id: id, outbound: outbound, sessionID: nil, resumeURLUsed: onResumeURL)
            let interval = Int(configuration.heartbeatInterval.seconds * 1000)
            outbound.yield(.payload(["op": 10, "d": ["heartbeat_interval": JSON(interval)], "s": nil, "t": nil]))
        }
        return (id, frames)
    }

    /// The connection is gone. A client that closed it with 1000 or 1001 ended its session, as
    /// Discord documents: a later RESUME of it gets op 9 (not resumable).
    func closeGatewayConnection(_ id: UUID, clientCloseCode: UInt16? = nil) {
        defer { observers.changed() }
        state.withLock { state in
            let sessionID = state.gateway.connections[id]?.sessionID
            state.gateway.connections[id]?.outbound.finish()
            state.gateway.detach(id)
            if let sessionID, let clientCloseCode, clientCloseCode == 1000 || clientCloseCode == 1001 {
                state.gateway.sessions[sessionID] = nil
                state.counters.sessionsEndedByClient += 1
            }
        }
    }

    /// Handles one text frame from a client, answering on its outbound stream.
    func receiveGatewayPayload(_ text: String, on connectionID: UUID) {
        defer { observers.changed() }
        state.withLock { state in
            guard let connection = state.gateway.connections[connectionID] else { return }
            func close(_ code: UInt16, _ reason: String) {
                connection.outbound.yield(.close(code: code, reason: reason))
            }
            guard let payload = try? JSON.parse(Data(text.utf8)), let op = payload["op"]?.intValue else {
                return close(4002, "Error while decoding payload.")
            }
            let data = payload["d"] ?? .null
            switch op {
            case 1:
                state.counters.heartbeats += 1
                if state.gateway.acksHeartbeats {
                    connection.outbound.yield(.payload(["op": 11, "d": nil, "s": nil, "t": nil]))
                }
            case 2:
                guard connection.sessionID == nil else { return close(4005, "Already authenticated.") }
                guard data["token"]?.stringValue == token else { return close(4004, "Authentication failed.") }
                guard let intents = data["intents"]?.intValue, intents & ~GatewayIntent.knownMask == 0 else {
                    return close(4013, "Invalid intent(s).")
                }
                let disallowed = GatewayIntent.privileged.filter {
                    intents & $0.rawValue != 0 && !($0 == .messageContent && state.messageContentIntentEnabled)
                }
                guard disallowed.isEmpty else { return close(4014, "Disallowed intent(s).") }
                let now = configuration.clock.now
                guard state.identifyBudget(now: now, configuration).remaining > 0 else { return close(4008, "Rate limited.") }
                // max_concurrency: identifies per 5 s in the shard's bucket; past it, op 9 (not resumable).
                let shard = data["shard"]?[0]?.intValue ?? 0
                guard state.takeIdentifySlot(bucket: shard % max(1, configuration.maxConcurrency), now: now, configuration) else {
                    state.counters.identifiesOverConcurrency += 1
                    connection.outbound.yield(.payload(["op": 9, "d": false, "s": nil, "t": nil]))
                    return
                }
                if state.identifyWindowStart == nil { state.identifyWindowStart = now }
                state.identifyRemaining -= 1
                state.counters.identifies += 1
                identify(connectionID, intents: intents, state: &state)
            case 6:
                guard connection.sessionID == nil else { return close(4005, "Already authenticated.") }
                guard data["token"]?.stringValue == token else { return close(4004, "Authentication failed.") }
                resume(
                    connectionID, sessionID: data["session_id"]?.stringValue ?? "",
                    sequence: data["seq"]?.intValue ?? -1, state: &state)
            case 3, 4, 8:
                if connection.sessionID == nil { close(4003, "Not authenticated.") }
            default:
                close(4001, "Unknown opcode.")
            }
        }
    }

    private func identify(_ connectionID: UUID, intents: Int, state: inout State) {
        let sessionID = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        state.gateway.sessions[sessionID] = .init(id: sessionID, intents: intents, connectionID: connectionID)
        state.gateway.bufferLimit = configuration.resumeBufferSize
        state.gateway.connections[connectionID]?.sessionID = sessionID
        let ready: JSON = [
            "v": 10,
            "user": bot.selfJSON,
            "guilds": .array(guilds.map { ["id": .string($0.description), "unavailable": true] }),
            "session_id": .string(sessionID),
            "session_type": "normal",
            "resume_gateway_url": .string(resumeGatewayURL),
            "application": ["id": .string(applicationID.description), "flags": JSON(state.messageContentIntentEnabled ? 1 << 19 : 0)],
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "geo_ordered_rtc_regions": [],
            "guild_join_requests": [],
        ]
        state.gateway.sessions[sessionID]!.intents |= GatewayIntent.guilds.rawValue
        state.gateway.dispatch("READY", ready, intent: .guilds, author: nil, onlySession: sessionID)
        state.gateway.sessions[sessionID]!.intents = intents
        if intents & GatewayIntent.guilds.rawValue != 0 {
            for guild in guilds {
                state.gateway.dispatch(
                    "GUILD_CREATE", guildCreate(guild, state: state), intent: .guilds, author: nil, onlySession: sessionID)
            }
        }
    }

    private func resume(_ connectionID: UUID, sessionID: String, sequence: Int, state: inout State) {
        let outbound = state.gateway.connections[connectionID]?.outbound
        guard var session = state.gateway.sessions[sessionID], sequence <= session.sequence,
            sequence >= (session.buffer.first?.sequence ?? session.sequence + 1) - 1
        else {
            state.counters.resumesRejected += 1
            outbound?.yield(.payload(["op": 9, "d": false, "s": nil, "t": nil]))
            return
        }
        if let previous = session.connectionID, previous != connectionID {
            state.gateway.send(.drop, to: previous)
            state.gateway.connections[previous]?.sessionID = nil
        }
        state.counters.resumes += 1
        if state.gateway.connections[connectionID]?.resumeURLUsed == false { state.counters.resumesOffResumeURL += 1 }
        session.connectionID = connectionID
        state.gateway.connections[connectionID]?.sessionID = sessionID
        for event in session.buffer where event.sequence > sequence {
            outbound?.yield(.payload(event.payload))
        }
        session.sequence += 1
        outbound?.yield(.payload(["op": 0, "t": "RESUMED", "s": JSON(session.sequence), "d": [:]]))
        state.gateway.sessions[sessionID] = session
    }

    var resumeGatewayURL: String {
        baseURL.replacingOccurrences(of: "http://", with: "ws://") + "/gateway-resume"
    }

    var gatewayURL: String {
        baseURL.replacingOccurrences(of: "http://", with: "ws://") + "/gateway"
    }

    /// GUILD_CREATE of `guild` (the first guild's when nil): its channels and active threads.
    func guildCreate(_ guild: Snowflake? = nil, state: State) -> JSON {
        let guild = guild ?? guildID
        let joined = JSON.string(ISO8601.string(guild.date))
        let channels = state.channels.values.filter { !$0.isThread && self.guild(of: $0) == guild }.sorted { $0.id < $1.id }
        let threads = state.channels.values.filter { $0.isThread && $0.thread?.archived == false && self.guild(of: $0) == guild }
            .sorted { $0.id < $1.id }
        return [
            "id": .string(guild.description),
            "name": .string(guild == guildID ? configuration.guildName : configuration.guildName + " (second)"),
            "icon": nil, "icon_hash": nil, "splash": nil, "discovery_splash": nil, "banner": nil, "description": nil,
            "owner_id": .string(agent.id.description),
            "afk_channel_id": nil, "afk_timeout": 300,
            "verification_level": 0, "default_message_notifications": 1, "explicit_content_filter": 0,
            "roles": rolesJSON(state: state),
            "emojis": [], "stickers": [], "features": [],
            "mfa_level": 0, "application_id": nil,
            "system_channel_id": nil, "system_channel_flags": 0, "rules_channel_id": nil,
            "public_updates_channel_id": nil, "safety_alerts_channel_id": nil,
            "vanity_url_code": nil, "premium_tier": 0, "premium_subscription_count": 0,
            "premium_progress_bar_enabled": false,
            "preferred_locale": "en-US", "nsfw_level": 0, "nsfw": false,
            "max_members": 500_000, "max_video_channel_users": 25,
            "joined_at": joined, "large": false, "unavailable": false,
            "member_count": JSON(state.users.count),
            "members": .array(
                state.users.values.map {
                    [
                        "user": $0.json, "nick": nil, "avatar": nil,
                        "roles": .array((state.memberRoles[$0.id] ?? []).map { .string($0.description) }), "joined_at": joined,
                        "premium_since": nil, "deaf": false, "mute": false, "flags": 0, "pending": false,
                    ]
                }),
            "channels": .array(channels.map(json)),
            "threads": .array(threads.map(json)),
            "voice_states": [], "presences": [], "stage_instances": [], "guild_scheduled_events": [],
            "soundboard_sounds": [],
        ]
    }

    // MARK: Faults

    func dropGatewayConnections() {
        state.withLock { $0.gateway.sendToAll(.drop) }
    }

    func sendGatewayReconnect() {
        state.withLock { $0.gateway.sendToAll(.payload(["op": 7, "d": nil, "s": nil, "t": nil])) }
    }

    /// op 9: `resumable: false` also forgets the sessions, so the client must identify again.
    func sendInvalidSession(resumable: Bool) {
        state.withLock { state in
            state.gateway.sendToAll(.payload(["op": 9, "d": .bool(resumable), "s": nil, "t": nil]))
            if !resumable {
                for connectionID in state.gateway.connections.keys {
                    state.gateway.connections[connectionID]?.sessionID = nil
                }
                state.gateway.sessions.removeAll()
            }
        }
    }

    func closeGatewayConnections(code: UInt16, reason: String) {
        state.withLock { $0.gateway.sendToAll(.close(code: code, reason: reason)) }
    }

    func setHeartbeatAcks(_ enabled: Bool) {
        state.withLock { $0.gateway.acksHeartbeats = enabled }
    }
}
