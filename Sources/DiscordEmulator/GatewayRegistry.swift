import Foundation

enum GatewayIntent: Int, Sendable {
    case guilds = 1
    case guildMembers = 2
    case guildWebhooks = 32
    case guildPresences = 256
    case guildMessages = 512
    case guildMessageReactions = 1024
    case guildMessageTyping = 2048
    case messageContent = 32768

    static let privileged: [GatewayIntent] = [.guildMembers, .guildPresences, .messageContent]
    /// Every bit Discord defines today (0...25 with gaps); others are 4013.
    static let knownMask = 0x3FF_FFFF
}

/// What a gateway connection's writer task sends next.
enum GatewayFrame: Sendable {
    case payload(JSON)
    case close(code: UInt16, reason: String)
    /// Drop the TCP connection without a close frame, as a network failure would.
    case drop
}

/// Gateway sessions outlive their connections: events keep buffering while a client is away so
/// that a RESUME can replay them.
struct GatewayRegistry: Sendable {
    struct Session: Sendable {
        var id: String
        var intents: Int
        var sequence = 0
        var buffer: [(sequence: Int, payload: JSON)] = []
        var connectionID: UUID?
    }

    struct Connection: Sendable {
        var id: UUID
        var outbound: AsyncStream<GatewayFrame>.Continuation
        var sessionID: String?
        var resumeURLUsed: Bool
    }

    enum Author: Sendable { case bot, other }

    var sessions: [String: Session] = [:]
    var connections: [UUID: Connection] = [:]
    var acksHeartbeats = true
    var bufferLimit = 20_000

    /// Sends `event` to every session whose intents ask for it, or to `onlySession` alone. An event
    /// with no intent (INTERACTION_CREATE) goes to every session, whatever it asked for.
    mutating func dispatch(
        _ event: String, _ data: JSON, intent: GatewayIntent?, author: Author?, onlySession: String? = nil
    ) {
        for id in onlySession.map({ [$0] }) ?? Array(sessions.keys) where sessions[id] != nil {
            if let intent, sessions[id]!.intents & intent.rawValue == 0 { continue }
            var body = data
            if author == .other, sessions[id]!.intents & GatewayIntent.messageContent.rawValue == 0 {
                body = merging(body, ["content": "", "attachments": [], "embeds": [], "components": []])
            }
            sessions[id]!.sequence += 1
            let sequence = sessions[id]!.sequence
            let payload: JSON = ["op": 0, "t": .string(event), "s": JSON(sequence), "d": body]
            sessions[id]!.buffer.append((sequence, payload))
            if sessions[id]!.buffer.count > bufferLimit {
                sessions[id]!.buffer.removeFirst(sessions[id]!.buffer.count - bufferLimit)
            }
            send(.payload(payload), toSession: id)
        }
    }

    func send(_ frame: GatewayFrame, toSession id: String) {
        guard let connectionID = sessions[id]?.connectionID else { return }
        connections[connectionID]?.outbound.yield(frame)
    }

    func send(_ frame: GatewayFrame, to connectionID: UUID) {
        connections[connectionID]?.outbound.yield(frame)
    }

    func sendToAll(_ frame: GatewayFrame) {
        for connection in connections.values { connection.outbound.yield(frame) }
    }

    mutating func detach(_ connectionID: UUID) {
        if let sessionID = connections.removeValue(forKey: connectionID)?.sessionID,
            sessions[sessionID]?.connectionID == connectionID
        {
            sessions[sessionID]?.connectionID = nil
        }
    }
}
