import DiscordREST
import Synchronization
import Deadlines
import Foundation

/// The control surface: act as the support agent, change the world, inject faults, read counters.
extension DiscordEmulator {
    public struct UploadedFile: Sendable, Codable {
        public var filename: String
        public var contentType: String?
        public var data: Data

        public init(filename: String, contentType: String? = nil, data: Data) {
            self.filename = filename
            self.contentType = contentType
            self.data = data
        }
    }

    public struct ThreadSnapshot: Sendable, Codable, Equatable {
        public var id: String
        public var name: String
        public var parentID: String?
        public var archived: Bool
        public var locked: Bool
        public var appliedTags: [String]
        public var lastMessageID: String?
        /// When the bot (relaying the app user) last started typing here, if it has.
        public var botTypingAt: Date?
    }

    public struct MessageSnapshot: Sendable, Codable, Equatable {
        public var id: String
        public var channelID: String
        public var authorID: String
        public var authorIsBot: Bool
        /// The author's display name: `global_name` when set, else the username (for a webhook's
        /// message, the name it posted under).
        public var authorName: String
        /// The webhook that posted it (for an interaction's answers, the application's id).
        public var webhookID: String?
        public var content: String
        public var type: Int
        public var attachmentNames: [String]
        /// The attachments' ids and CDN URLs (signed now), in order.
        public var attachmentIDs: [String]
        public var attachmentURLs: [String]
        public var mentionEveryone: Bool
        /// The roles it pinged (`mention_roles`).
        public var mentionRoles: [String] = []
        public var nonce: String?
        public var timestamp: String
        /// Emoji the bot reacted with.
        public var reactions: [String]
        /// The buttons under it, row after row.
        public var buttons: [ButtonSnapshot] = []
    }

    public struct ButtonSnapshot: Sendable, Codable, Equatable {
        public var label: String?
        /// 1 primary, 2 secondary, 3 success, 4 danger, 5 link.
        public var style: Int
        public var customID: String?
        public var url: String?
        public var disabled: Bool
    }

    /// Posts as the human support agent; `replyingTo` makes it a type-19 reply.
    @discardableResult
    public func replyAsAgent(
        inThread threadID: String, content: String, attachments: [UploadedFile] = [], replyingTo: String? = nil
    ) throws(DiscordFailure) -> MessageSnapshot {
        let files = attachments.map {
            EmulatedAttachment(id: world.ids.next(), filename: $0.filename, contentType: $0.contentType, description: nil, data: $0.data)
        }
        let reference = try replyingTo.map { (id) throws(DiscordFailure) -> Snowflake in
            guard let snowflake = Snowflake(id) else { throw .unknownMessage }
            return snowflake
        }
        guard !content.isEmpty || !files.isEmpty else { throw .emptyMessage }
        let message = NewMessage(content: content, attachments: files, reference: reference)
        let posted = try world.postMessage(
            message, to: try Self.snowflake(threadID), author: world.agent.id,
            type: reference == nil ? MessageType.default.rawValue : MessageType.reply.rawValue)
        return try snapshot(ofMessage: posted.message)
    }

    /// An internal note: a `:ninja:` message from the agent, which the app user must never see.
    @discardableResult
    public func postNote(inThread threadID: String, content: String) throws(DiscordFailure) -> MessageSnapshot {
        try replyAsAgent(inThread: threadID, content: ":ninja: " + content)
    }

    /// The bytes of an attachment as Discord keeps them.
    public func attachmentData(_ attachmentID: String, inChannel channelID: String) -> Data? {
        guard let attachment = Snowflake(attachmentID), let channel = Snowflake(channelID) else { return nil }
        return world.attachment(attachment, in: channel)?.data
    }

    /// Moves the CDN's clock forward: signed attachment URLs older than a day stop working.
    public func advanceClock(by seconds: TimeInterval) {
        world.advanceClock(by: seconds)
    }

    /// The agent starts typing in the thread (TYPING_START, as Discord's client sends it).
    public func typeAsAgent(inThread threadID: String) throws(DiscordFailure) {
        try world.startTyping(in: try Self.snowflake(threadID), user: world.agent.id)
    }

    /// Edits a message: as `member` (a user id), who must be its author as in Discord (50005
    /// otherwise), or as nobody in particular when nil.
    public func editMessage(_ messageID: String, inChannel channelID: String, content: String, as member: String? = nil) throws(DiscordFailure) {
        _ = try world.editMessage(
            try Self.snowflake(messageID), in: try Self.snowflake(channelID), MessageEdit(content: content), editor: try member.map(Self.member))
    }

    public func deleteMessage(_ messageID: String, inChannel channelID: String) throws(DiscordFailure) {
        try world.deleteMessage(try Self.snowflake(messageID), in: try Self.snowflake(channelID))
    }

    public func deleteThread(_ threadID: String) throws(DiscordFailure) {
        _ = try world.deleteChannel(try Self.snowflake(threadID))
    }

    public func archiveThread(_ threadID: String, locked: Bool = false) throws(DiscordFailure) {
        _ = try world.modifyThread(try Self.snowflake(threadID), archived: true, locked: locked)
    }

    public func lockThread(_ threadID: String) throws(DiscordFailure) {
        _ = try world.modifyThread(try Self.snowflake(threadID), locked: true)
    }

    public func setForumRequiresTag(_ required: Bool) { world.setForumRequiresTag(required) }

    /// Takes `permissions` (a bitfield) from the bot in the forum, as a member overwrite.
    public func denyBotInForum(_ permissions: UInt64) { world.denyBotInForum(permissions) }

    /// Sets what `@everyone` may do in the guild (the base of every member's permissions).
    public func setEveryonePermissions(_ permissions: UInt64) { world.setEveryonePermissions(permissions) }

    /// The Message Content intent's switch in the Developer Portal (off: IDENTIFY with it closes 4014).
    public func setMessageContentIntent(enabled: Bool) { world.setMessageContentIntent(enabled) }

    /// A member writes a post in the FAQ forum (a curated answer, if ThreadDesk believes its
    /// author): its thread's id, which is its starter message's too. `tags` are tag names of the
    /// FAQ forum; `member` is a user id (`addMember`), the agent (the guild's owner) when nil.
    /// Refused (50013) to a member who may not create posts there, as Discord's client would.
    @discardableResult
    public func postFAQ(
        title: String, answer: String, tags: [String] = [], attachments: [UploadedFile] = [], as member: String? = nil,
        in forumID: String? = nil
    ) throws(DiscordFailure) -> String {
        // The FAQ forum unless another forum is named (another app's FAQ forum).
        let forum = try forumID.map(Self.snowflake) ?? world.faqForumID
        let files = attachments.map {
            EmulatedAttachment(id: world.ids.next(), filename: $0.filename, contentType: $0.contentType, description: nil, data: $0.data)
        }
        let author = try member.map(Self.member) ?? world.agent.id
        return try world.state.withLock { state throws(DiscordFailure) -> String in
            guard state.users[author] != nil else { throw .unknownMember }
            let needed = Permissions.viewChannel | Permissions.sendMessages
            guard world.permissions(of: author, in: forum, state: state) & needed == needed else { throw .missingPermissions }
            let available = state.channels[forum]?.availableTags ?? []
            let ids = tags.compactMap { name in available.first { $0.name == name }?.id }
            let json = try world.startForumThread(
                in: forum, name: title, autoArchiveDuration: 4320, appliedTags: ids,
                message: NewMessage(content: answer, attachments: files, reference: nil), author: author, state: &state)
            return json["id"]?.stringValue ?? ""
        }
    }

    /// The FAQ forum's id.
    public var faqChannelID: String { world.faqForumID.description }

    /// The FAQ forum's tags, name → id.
    public var faqTagIDs: [String: String] {
        world.state.withLock { state in
            Dictionary((state.channels[world.faqForumID]?.availableTags ?? []).map { ($0.name, $0.id.description) }, uniquingKeysWith: { first, _ in first })
        }
    }

    /// The forum's tags, id → name.
    /// The names of every forum's tags, by their ids (a guild with several forums).
    public var tagNames: [String: String] {
        world.state.withLock { state in
            Dictionary(
                state.channels.values.filter { $0.type == .guildForum }.flatMap(\.availableTags).map { ($0.id.description, $0.name) },
                uniquingKeysWith: { first, _ in first })
        }
    }

    public var forumTagNames: [String: String] {
        world.state.withLock { state in
            Dictionary((state.channels[world.forumID]?.availableTags ?? []).map { ($0.id.description, $0.name) }, uniquingKeysWith: { first, _ in first })
        }
    }

    /// The forum's tag ids, to configure as ThreadDesk's default tag.
    public var forumTagIDs: [String] {
        world.state.withLock { $0.channels[world.forumID]?.availableTags.map(\.id.description) ?? [] }
    }

    /// The next `count` REST requests (control routes excluded) answer `status` without effect,
    /// after `after` requests that go through as usual.
    public func injectServerErrors(count: Int, status: Int = 500, after: Int = 0) {
        world.state.withLock {
            $0.faults.serverErrors = count
            $0.faults.serverErrorStatus = status
            $0.faults.serverErrorsAfter = after
        }
    }

    /// The next `count` requests to `route` (a template such as `/channels/{channel_id}`), after
    /// `after` that go through as usual, are answered `status` without effect; other routes go on
    /// as usual. 0 ends it.
    public func failRequests(_ method: String, _ route: String, count: Int, status: Int = 503, after: Int = 0) {
        world.state.withLock { $0.faults.routeErrors["\(method) \(route)"] = (count, status, after) }
    }

    /// Requests to `route` (a template such as `/webhooks/{webhook_id}/{webhook_token}`) are
    /// counted as they arrive (`counters.requestsByRoute`), then wait, before taking effect,
    /// until `releaseHeldRequests()`: a test catches a call in flight and acts meanwhile. The
    /// emulator's shutdown ends the wait too.
    public func holdRequests(_ method: String, _ route: String) {
        world.state.withLock { _ = $0.faults.held.insert("\(method) \(route)") }
    }

    /// Lets every held request go on, and holds no more.
    public func releaseHeldRequests() {
        world.state.withLock { $0.faults.held.removeAll() }
        world.observers.changed()
    }

    /// The next `count` requests to `route` (a template such as `/channels/{channel_id}/threads`)
    /// take effect as usual, but their answers are lost on the way back: the caller gets a 504 from
    /// Discord's edge instead, as when Cloudflare gives up on a slow origin that went on working.
    public func loseAnswers(_ method: String, _ route: String, count: Int = 1) {
        world.state.withLock { $0.faults.lostAnswers["\(method) \(route)"] = count }
    }

    /// The next `count` attachment downloads are answered with a 302 to a URL off the CDN (a
    /// path of this host outside `/attachments/`, counted in `offCDNRequests` when followed), as a
    /// CDN or a proxy in front of it might: a client that follows redirects fetches whatever is there.
    public func redirectCDNDownloads(count: Int = 1) {
        world.state.withLock { $0.faults.cdnRedirects = count }
    }

    /// The next `count` REST requests get Cloudflare's ban answer: 429 with an HTML body, no
    /// Discord JSON, and `Retry-After: retryAfter` (any text, to try malformed values).
    public func injectEdge429s(count: Int, retryAfter: String = "3600") {
        world.state.withLock { $0.faults.edge429s = count; $0.faults.edge429RetryAfter = retryAfter }
    }

    /// Every answer carries `X-RateLimit-Reset-After: value` (nil: the real one), to try values
    /// such as `inf`, `nan`, `-1` or `1e300`.
    public func overrideResetAfter(_ value: String?) {
        world.state.withLock { $0.faults.resetAfterOverride = value }
    }

    public func setLatency(_ latency: Duration) {
        world.state.withLock { $0.faults.latency = latency }
    }

    public func dropGatewayConnections() { world.dropGatewayConnections() }
    public func sendGatewayReconnect() { world.sendGatewayReconnect() }
    public func sendInvalidSession(resumable: Bool) { world.sendInvalidSession(resumable: resumable) }
    public func setHeartbeatAcks(_ enabled: Bool) { world.setHeartbeatAcks(enabled) }
    public func closeGatewayConnections(code: UInt16, reason: String = "") {
        world.closeGatewayConnections(code: code, reason: reason)
    }

    public var counters: Counters { world.state.withLock { $0.counters } }
    public var recordedRequests: [RecordedRequest] { world.state.withLock { $0.requestLog } }

    public func threads() -> [ThreadSnapshot] {
        world.state.withLock { state in
            state.channels.values.filter(\.isThread).sorted { $0.id < $1.id }.map {
                ThreadSnapshot(
                    id: $0.id.description, name: $0.name, parentID: $0.parentID?.description,
                    archived: $0.thread?.archived ?? false, locked: $0.thread?.locked ?? false,
                    appliedTags: $0.appliedTags.map(\.description), lastMessageID: $0.lastMessageID?.description,
                    botTypingAt: $0.typing[world.bot.id])
            }
        }
    }

    /// Oldest first, including notes and the bot's posts: what a Discord user sees in the thread.
    public func messages(inThread threadID: String) -> [MessageSnapshot] {
        guard let id = Snowflake(threadID) else { return [] }
        return world.state.withLock { state in
            // The emulator's own view: the nonce each post was made with, which Discord's reads leave out.
            (state.messages[id] ?? []).compactMap { try? snapshot(ofMessage: world.json($0, in: state, withNonce: true)) }
        }
    }

    private func snapshot(ofMessage json: JSON) throws(DiscordFailure) -> MessageSnapshot {
        MessageSnapshot(
            id: json["id"]?.stringValue ?? "", channelID: json["channel_id"]?.stringValue ?? "",
            authorID: json["author"]?["id"]?.stringValue ?? "",
            authorIsBot: json["author"]?["bot"]?.boolValue ?? false,
            authorName: json["author"]?["global_name"]?.stringValue ?? json["author"]?["username"]?.stringValue ?? "",
            webhookID: json["webhook_id"]?.stringValue,
            content: json["content"]?.stringValue ?? "", type: json["type"]?.intValue ?? 0,
            attachmentNames: (json["attachments"]?.arrayValue ?? []).compactMap { $0["filename"]?.stringValue },
            attachmentIDs: (json["attachments"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue },
            attachmentURLs: (json["attachments"]?.arrayValue ?? []).compactMap { $0["url"]?.stringValue },
            mentionEveryone: json["mention_everyone"]?.boolValue ?? false,
            mentionRoles: (json["mention_roles"]?.arrayValue ?? []).compactMap(\.stringValue),
            nonce: json["nonce"]?.stringValue ?? json["nonce"]?.intValue.map(String.init),
            timestamp: json["timestamp"]?.stringValue ?? "",
            reactions: (json["reactions"]?.arrayValue ?? []).compactMap { $0["emoji"]?["name"]?.stringValue },
            buttons: (json["components"]?.arrayValue ?? []).flatMap { $0["components"]?.arrayValue ?? [] }.map {
                ButtonSnapshot(
                    label: $0["label"]?.stringValue, style: $0["style"]?.intValue ?? 0, customID: $0["custom_id"]?.stringValue,
                    url: $0["url"]?.stringValue, disabled: $0["disabled"]?.boolValue ?? false)
            })
    }

    static func snowflake(_ value: String) throws(DiscordFailure) -> Snowflake {
        guard let id = Snowflake(value) else { throw .unknownChannel }
        return id
    }
}
