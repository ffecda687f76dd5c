import DiscordREST
import Synchronization
import Foundation

/// A message about to be created, already checked for shape by the REST layer.
struct NewMessage: Sendable {
    var content: String
    var nonce: JSON?
    var enforceNonce = false
    var allowedMentions: JSON?
    var attachments: [EmulatedAttachment] = []
    var reference: Snowflake?
    var flags = 0
    var origin = MessageOrigin()
    /// Checked rows (`EmulatedComponents`); only an application's messages carry any.
    var components: [JSON] = []
}

extension DiscordWorld {
    /// `POST /channels/{forum}/threads` (and a webhook's post with `thread_name`): the thread and
    /// its starter message share one id.
    func startForumThread(
        in forumID: Snowflake, name: String, autoArchiveDuration: Int, appliedTags: [Snowflake], message: NewMessage
    ) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            try startForumThread(
                in: forumID, name: name, autoArchiveDuration: autoArchiveDuration, appliedTags: appliedTags,
                message: message, author: bot.id, state: &state)
        }
    }

    func startForumThread(
        in forumID: Snowflake, name: String, autoArchiveDuration: Int, appliedTags: [Snowflake], message: NewMessage,
        author: Snowflake, state: inout State
    ) throws(DiscordFailure) -> JSON {
        guard let forum = state.channels[forumID] else { throw .unknownChannel }
        guard forum.type == .guildForum else { throw .wrongChannelType }
        let known = Set(forum.availableTags.map(\.id))
        if let unknown = appliedTags.firstIndex(where: { !known.contains($0) }) {
            throw .invalidForm(
                ["applied_tags", String(unknown)], code: "BASE_TYPE_CHOICES",
                message: "Value \"\(appliedTags[unknown])\" is not a valid tag for this forum.")
        }
        if forum.requiresTag && appliedTags.isEmpty { throw .tagRequired }
        let active = state.channels.values.count { $0.isThread && $0.thread?.archived == false }
        if active >= configuration.maxActiveThreads { throw .tooManyActiveThreads }
        let id = ids.next()
        let now = id.date
        var thread = EmulatedChannel(
            id: id, type: .publicThread, name: name, parentID: forumID, ownerID: author,
            thread: ThreadMetadata(autoArchiveDuration: autoArchiveDuration, createdAt: now)
        )
        thread.appliedTags = appliedTags
        thread.guildID = forum.guildID
        state.channels[id] = thread
        state.channels[forumID]?.lastMessageID = id
        state.gateway.dispatch(
            "THREAD_CREATE", merging(json(thread), ["newly_created": true]), intent: .guilds, author: nil)
        let starter = insertMessage(message, id: id, into: id, author: author, type: 0, state: &state)
        var response = json(state.channels[id]!).objectValue ?? [:]
        response["message"] = json(starter, in: state, withNonce: true)
        return .object(response)
    }

    /// `POST /channels/{id}/messages` and the control API's agent replies share this path.
    /// Returns the message and whether it is new (false when a nonce matched an earlier post).
    func postMessage(
        _ message: NewMessage, to channelID: Snowflake, author: Snowflake, type: Int = 0
    ) throws(DiscordFailure) -> (message: JSON, created: Bool) {
        try state.withLock { state throws(DiscordFailure) -> (message: JSON, created: Bool) in
            let posted = try postMessage(message, to: channelID, author: author, type: type, state: &state)
            return (json(posted.message, in: state, withNonce: true), posted.created)
        }
    }

    /// Every message into a channel goes through here — the bot's, the agent's, a webhook's, an
    /// interaction's answer — so the rules (archived threads reopen, locked ones refuse) hold for all.
    func postMessage(
        _ message: NewMessage, to channelID: Snowflake, author: Snowflake, type: Int, state: inout State
    ) throws(DiscordFailure) -> (message: EmulatedMessage, created: Bool) {
        guard let channel = state.channels[channelID] else { throw .unknownChannel }
        guard channel.type != .guildForum else { throw .nonTextChannel }
        if let metadata = channel.thread {
            if metadata.locked && metadata.archived { throw .archivedThread }
            if metadata.locked { throw .lockedThread }
            if metadata.archived { setArchived(channelID, archived: false, locked: nil, state: &state) }
        }
        if let reference = message.reference,
            state.messages[channelID]?.contains(where: { $0.id == reference }) != true
        {
            throw .invalidForm(
                ["message_reference"], code: "REPLIES_UNKNOWN_MESSAGE", message: "Unknown message")
        }
        if message.enforceNonce, let nonce = message.nonce.map(Self.nonceKey),
            let existing = state.nonces[NonceKey(channelID: channelID, authorID: author, nonce: nonce)],
            let earlier = state.messages[channelID]?.first(where: { $0.id == existing })
        {
            return (earlier, false)
        }
        return (insertMessage(message, id: ids.next(), into: channelID, author: author, type: type, state: &state), true)
    }

    private func insertMessage(
        _ message: NewMessage, id: Snowflake, into channelID: Snowflake, author: Snowflake, type: Int, state: inout State
    ) -> EmulatedMessage {
        let mentions = Mentions(content: message.content, allowed: message.allowedMentions)
        var stored = EmulatedMessage(
            id: id, channelID: channelID, authorID: author, content: message.content, type: type,
            attachments: message.attachments, nonce: message.nonce, editedAt: nil,
            mentionEveryone: mentions.everyone,
            mentionIDs: mentions.users.filter { state.users[$0] != nil },
            reference: message.reference, reactions: [], flags: message.flags, origin: message.origin,
            components: message.components
        )
        stored.mentionRoleIDs = mentions.roles
        state.messages[channelID, default: []].append(stored)
        if let nonce = message.nonce.map(Self.nonceKey) {
            state.nonces[NonceKey(channelID: channelID, authorID: author, nonce: nonce)] = id
        }
        state.channels[channelID]?.lastMessageID = id
        // A message from someone ends their typing indicator, as Discord's clients show it.
        state.channels[channelID]?.typing[author] = nil
        state.channels[channelID]?.totalMessageSent += 1
        if id != channelID { state.channels[channelID]?.messageCount += 1 }
        if stored.mentionEveryone { state.counters.everyonePings += 1 }
        state.gateway.dispatch(
            "MESSAGE_CREATE", gatewayJSON(stored, in: state, withNonce: true), intent: .guildMessages, author: author == bot.id ? .bot : .other)
        return stored
    }

    private static func nonceKey(_ nonce: JSON) -> String {
        nonce.stringValue ?? nonce.intValue.map(String.init) ?? ""
    }

    /// Newest first, as Discord pages them; `after` pages take the oldest messages past the cursor.
    func messages(
        in channelID: Snowflake, before: Snowflake?, after: Snowflake?, around: Snowflake?, limit: Int
    ) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            guard state.channels[channelID] != nil else { throw .unknownChannel }
            let all = state.messages[channelID] ?? []
            let page: ArraySlice<EmulatedMessage>
            if let around {
                let older = all.filter { $0.id < around }.suffix(limit / 2)
                let newer = all.filter { $0.id >= around }.prefix(limit - older.count)
                page = ArraySlice(older + newer)
            } else if let after {
                page = all.filter { $0.id > after }.prefix(limit)
            } else if let before {
                page = all.filter { $0.id < before }.suffix(limit)
            } else {
                page = all.suffix(limit)
            }
            return .array(page.reversed().map { json($0, in: state) })
        }
    }

    func message(_ messageID: Snowflake, in channelID: Snowflake) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            guard state.channels[channelID] != nil else { throw .unknownChannel }
            guard let message = state.messages[channelID]?.first(where: { $0.id == messageID }) else {
                throw .unknownMessage
            }
            return json(message, in: state)
        }
    }

    /// Edits content and buttons; `editor` nil means the control API, which may edit anyone's message.
    func editMessage(_ messageID: Snowflake, in channelID: Snowflake, _ edit: MessageEdit, editor: Snowflake?)
        throws(DiscordFailure) -> JSON
    {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            if let editor, state.messages[channelID]?.first(where: { $0.id == messageID })?.authorID != editor,
                state.messages[channelID]?.contains(where: { $0.id == messageID }) == true
            {
                throw .cannotEditOthers
            }
            if let message = state.messages[channelID]?.first(where: { $0.id == messageID }) {
                try Self.checkNotEmpty(after: edit, of: message)
            }
            let edited = try updateMessage(messageID, in: channelID, state: &state) { edit.apply(to: &$0) }
            return json(edited, in: state)
        }
    }

    /// An edit may not leave a message with nothing to show (50006).
    static func checkNotEmpty(after edit: MessageEdit, of message: EmulatedMessage) throws(DiscordFailure) {
        var edited = message
        edit.apply(to: &edited)
        if edited.content.isEmpty && edited.attachments.isEmpty && edited.components.isEmpty { throw .emptyMessage }
    }

    /// Changes a stored message and announces it (MESSAGE_UPDATE), as every edit path does.
    func updateMessage(
        _ messageID: Snowflake, in channelID: Snowflake, state: inout State, _ change: (inout EmulatedMessage) -> Void
    ) throws(DiscordFailure) -> EmulatedMessage {
        guard state.channels[channelID] != nil else { throw .unknownChannel }
        guard let index = state.messages[channelID]?.firstIndex(where: { $0.id == messageID }) else {
            throw .unknownMessage
        }
        change(&state.messages[channelID]![index])
        state.messages[channelID]![index].editedAt = Date()
        let edited = state.messages[channelID]![index]
        state.gateway.dispatch(
            "MESSAGE_UPDATE", gatewayJSON(edited, in: state), intent: .guildMessages,
            author: edited.authorID == bot.id ? .bot : .other)
        return edited
    }

    func deleteMessage(_ messageID: Snowflake, in channelID: Snowflake) throws(DiscordFailure) {
        try state.withLock { state throws(DiscordFailure) in
            try deleteMessage(messageID, in: channelID, state: &state)
        }
    }

    func deleteMessage(_ messageID: Snowflake, in channelID: Snowflake, state: inout State) throws(DiscordFailure) {
        guard state.channels[channelID] != nil else { throw .unknownChannel }
        guard let index = state.messages[channelID]?.firstIndex(where: { $0.id == messageID }) else {
            throw .unknownMessage
        }
        state.messages[channelID]!.remove(at: index)
        state.gateway.dispatch(
            "MESSAGE_DELETE",
            [
                "id": .string(messageID.description), "channel_id": .string(channelID.description),
                "guild_id": .string(guild(of: state.channels[channelID]).description),
            ],
            intent: .guildMessages, author: nil)
    }

    func addReaction(_ emoji: String, to messageID: Snowflake, in channelID: Snowflake) throws(DiscordFailure) {
        try state.withLock { state throws(DiscordFailure) in
            guard state.channels[channelID] != nil else { throw .unknownChannel }
            guard let index = state.messages[channelID]?.firstIndex(where: { $0.id == messageID }) else {
                throw .unknownMessage
            }
            if !state.messages[channelID]![index].reactions.contains(emoji) {
                state.messages[channelID]![index].reactions.append(emoji)
                state.gateway.dispatch(
                    "MESSAGE_REACTION_ADD",
                    [
                        "user_id": .string(bot.id.description), "channel_id": .string(channelID.description),
                        "message_id": .string(messageID.description), "guild_id": .string(guild(of: state.channels[channelID]).description),
                        "emoji": ["id": nil, "name": .string(emoji)], "burst": false, "type": 0,
                        "message_author_id": .string(state.messages[channelID]![index].authorID.description),
                    ],
                    intent: .guildMessageReactions, author: nil)
            }
        }
    }

    func removeReaction(_ emoji: String, from messageID: Snowflake, in channelID: Snowflake) throws(DiscordFailure) {
        try state.withLock { state throws(DiscordFailure) in
            guard state.channels[channelID] != nil else { throw .unknownChannel }
            guard let index = state.messages[channelID]?.firstIndex(where: { $0.id == messageID }) else {
                throw .unknownMessage
            }
            // Discord answers 204 whether or not the reaction was there.
            guard let position = state.messages[channelID]![index].reactions.firstIndex(of: emoji) else { return }
            state.messages[channelID]![index].reactions.remove(at: position)
            state.gateway.dispatch(
                "MESSAGE_REACTION_REMOVE",
                [
                    "user_id": .string(bot.id.description), "channel_id": .string(channelID.description),
                    "message_id": .string(messageID.description), "guild_id": .string(guild(of: state.channels[channelID]).description),
                    "emoji": ["id": nil, "name": .string(emoji)], "burst": false, "type": 0,
                ],
                intent: .guildMessageReactions, author: nil)
        }
    }

    /// `user` starts typing in `channelID`: TYPING_START to the sessions with GUILD_MESSAGE_TYPING.
    func startTyping(in channelID: Snowflake, user userID: Snowflake) throws(DiscordFailure) {
        try state.withLock { state throws(DiscordFailure) in
            guard state.channels[channelID] != nil else { throw .unknownChannel }
            let now = Date()
            state.channels[channelID]?.typing[userID] = now
            let user = state.users[userID] ?? (userID == bot.id ? bot : agent)
            state.gateway.dispatch(
                "TYPING_START",
                [
                    "channel_id": .string(channelID.description), "guild_id": .string(guild(of: state.channels[channelID]).description),
                    "user_id": .string(userID.description), "timestamp": JSON(Int(now.timeIntervalSince1970)),
                    "member": [
                        "user": user.json, "roles": [], "joined_at": "2024-01-01T00:00:00.000000+00:00", "deaf": false,
                        "mute": false, "flags": 0, "nick": nil, "avatar": nil, "banner": nil, "premium_since": nil,
                        "pending": false, "communication_disabled_until": nil,
                    ],
                ],
                intent: .guildMessageTyping, author: nil)
        }
    }

    func attachment(_ attachmentID: Snowflake, in channelID: Snowflake) -> EmulatedAttachment? {
        state.withLock { state in
            state.messages[channelID]?.lazy.flatMap(\.attachments).first { $0.id == attachmentID }
        }
    }
}

func merging(_ json: JSON, _ extra: [String: JSON]) -> JSON {
    guard var object = json.objectValue else { return json }
    object.merge(extra) { _, new in new }
    return .object(object)
}
