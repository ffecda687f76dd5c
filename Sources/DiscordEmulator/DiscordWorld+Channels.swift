import DiscordREST
import Synchronization
import Foundation

extension DiscordWorld {
    func channel(_ id: Snowflake) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            guard let channel = state.channels[id] else { throw .unknownChannel }
            return json(channel)
        }
    }

    func isArchivedThread(_ id: Snowflake) -> Bool {
        state.withLock { $0.channels[id]?.thread?.archived ?? false }
    }

    /// `PATCH /channels/{thread}` and the control API's archive and lock switches.
    func modifyThread(
        _ id: Snowflake, name: String? = nil, archived: Bool? = nil, locked: Bool? = nil, appliedTags: [Snowflake]? = nil
    ) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            guard let channel = state.channels[id] else { throw .unknownChannel }
            guard channel.isThread else { throw .wrongChannelType }
            if let name { state.channels[id]?.name = name }
            if let appliedTags { state.channels[id]?.appliedTags = appliedTags }
            if archived != nil || locked != nil {
                setArchived(id, archived: archived ?? channel.thread?.archived ?? false, locked: locked, state: &state)
            } else {
                state.gateway.dispatch("THREAD_UPDATE", json(state.channels[id]!), intent: .guilds, author: nil)
            }
            return json(state.channels[id]!)
        }
    }

    func setArchived(_ id: Snowflake, archived: Bool, locked: Bool?, state: inout State) {
        guard var metadata = state.channels[id]?.thread else { return }
        metadata.archived = archived
        if let locked { metadata.locked = locked }
        metadata.archivedAt = Date()
        state.channels[id]?.thread = metadata
        state.gateway.dispatch("THREAD_UPDATE", json(state.channels[id]!), intent: .guilds, author: nil)
    }

    /// `PATCH /channels/{forum}` with `available_tags`: the forum's tags become the list given,
    /// existing ones by id, new ones (no id, or one the forum does not have) with fresh ids.
    func modifyForumTags(_ id: Snowflake, _ tags: [(id: Snowflake?, name: String, moderated: Bool)]) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            guard let forum = state.channels[id] else { throw .unknownChannel }
            guard forum.type == .guildForum else { throw .wrongChannelType }
            let known = Set(forum.availableTags.map(\.id))
            var result: [(id: Snowflake, name: String)] = []
            for tag in tags {
                if let existing = tag.id, known.contains(existing) {
                    result.append((existing, tag.name))
                } else {
                    result.append((ids.next(), tag.name))
                }
            }
            state.channels[id]?.availableTags = result
            // Threads keep only tags the forum still has.
            let kept = Set(result.map(\.id))
            for (threadID, channel) in state.channels where channel.parentID == id && channel.isThread {
                state.channels[threadID]?.appliedTags.removeAll { !kept.contains($0) }
            }
            state.gateway.dispatch("CHANNEL_UPDATE", json(state.channels[id]!), intent: .guilds, author: nil)
            return json(state.channels[id]!)
        }
    }

    /// `POST /guilds/{guild}/channels`, as an admin (or a bot with Manage Channels) makes a forum
    /// (type 15) or a text channel (type 0): 201 with the channel, and CHANNEL_CREATE.
    func createGuildChannel(
        guild: Snowflake, name: String, type: Int, availableTags: [String], by member: Snowflake
    ) throws(DiscordFailure) -> JSON {
        guard isGuild(guild) else { throw .unknownGuild }
        guard (1...100).contains(name.utf16.count) else {
            throw .invalidForm(["name"], code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and 100 in length.")
        }
        guard let kind = ChannelType(rawValue: type), kind == .guildForum || kind == .guildText else {
            throw .invalidForm(["type"], code: "BASE_TYPE_CHOICES", message: "Value must be one of {0, 15}.")
        }
        guard availableTags.count <= 20, availableTags.allSatisfy({ (1...20).contains($0.count) }) else {
            throw .invalidForm(["available_tags"], code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and 20 in length.")
        }
        return try state.withLock { state throws(DiscordFailure) -> JSON in
            let roles = state.memberRoles[member] ?? []
            let held = state.roles.filter { roles.contains($0.id) }.reduce(state.everyonePermissions) { $0 | $1.permissions }
            guard member == agent.id || held & (Permissions.administrator | Permissions.manageChannels) != 0 else { throw .missingPermissions }
            let id = ids.next()
            var channel = EmulatedChannel(id: id, type: kind, name: name, availableTags: availableTags.map { (ids.next(), $0) })
            channel.guildID = guild
            state.channels[id] = channel
            state.gateway.dispatch("CHANNEL_CREATE", json(state.channels[id]!), intent: .guilds, author: nil)
            return json(state.channels[id]!)
        }
    }

    /// Deleting a thread removes it and its messages; later calls on its id get 10003.
    func deleteChannel(_ id: Snowflake) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            guard let channel = state.channels[id] else { throw .unknownChannel }
            guard channel.isThread else { throw .wrongChannelType }
            state.channels[id] = nil
            state.messages[id] = nil
            state.gateway.dispatch(
                "THREAD_DELETE",
                [
                    "id": .string(id.description), "guild_id": .string(guild(of: channel).description),
                    "parent_id": JSON(channel.parentID?.description), "type": JSON(channel.type.rawValue),
                ],
                intent: .guilds, author: nil)
            return json(channel)
        }
    }

    /// `GET /guilds/{guild}/threads/active`: every unarchived thread of the guild.
    func activeThreads(guild: Snowflake) throws(DiscordFailure) -> JSON {
        guard isGuild(guild) else { throw .unknownGuild }
        return state.withLock { state in
            let threads = state.channels.values
                .filter { $0.isThread && $0.thread?.archived == false && self.guild(of: $0) == guild }
                .sorted { $0.id < $1.id }
            return [
                "has_more": false,
                "threads": .array(threads.map(json)),
                "members": .array(
                    threads.map {
                        [
                            "id": .string($0.id.description), "user_id": .string(bot.id.description),
                            "join_timestamp": .string(ISO8601.string($0.id.date)), "flags": 1,
                        ]
                    }),
            ]
        }
    }

    /// `GET /channels/{channel}/threads/archived/public`: the channel's archived threads, the most
    /// recently archived first, those archived before `before`.
    func archivedPublicThreads(in channelID: Snowflake, before: Date?, limit: Int) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            guard let channel = state.channels[channelID] else { throw .unknownChannel }
            guard channel.type == .guildForum || channel.type == .guildText else { throw .wrongChannelType }
            func archivedAt(_ thread: EmulatedChannel) -> Date { thread.thread?.archivedAt ?? thread.thread?.createdAt ?? thread.id.date }
            let archived = state.channels.values
                .filter { thread in thread.parentID == channelID && thread.thread?.archived == true && before.map { archivedAt(thread) < $0 } ?? true }
                .sorted { archivedAt($0) != archivedAt($1) ? archivedAt($0) > archivedAt($1) : $0.id > $1.id }
            let page = archived.prefix(limit)
            return [
                "has_more": .bool(archived.count > limit),
                "threads": .array(page.map(json)),
                "members": [],
            ]
        }
    }

    func setForumRequiresTag(_ required: Bool) {
        state.withLock { state in
            state.channels[forumID]?.requiresTag = required
            state.gateway.dispatch("CHANNEL_UPDATE", json(state.channels[forumID]!), intent: .guilds, author: nil)
        }
    }
}
