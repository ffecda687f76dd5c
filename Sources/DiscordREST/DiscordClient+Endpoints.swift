import Foundation
import NIOHTTP1

/// The routes ThreadDesk uses, typed.
extension DiscordClient {
    public func currentUser() async throws(DiscordError) -> DiscordUser {
        try await send(Request(method: .GET, template: "/users/@me", path: "/users/@me", major: "", retriesServerErrors: true), as: DiscordUser.self)
    }

    public func gatewayBot() async throws(DiscordError) -> DiscordGatewayBot {
        try await send(
            Request(method: .GET, template: "/gateway/bot", path: "/gateway/bot", major: "", retriesServerErrors: true),
            as: DiscordGatewayBot.self)
    }

    public func channel(_ id: String) async throws(DiscordError) -> DiscordChannel {
        try await send(
            Request(method: .GET, template: "/channels/{channel_id}", path: "/channels/\(try Self.id(id))", major: id, retriesServerErrors: true),
            as: DiscordChannel.self)
    }

    /// Starts a forum post: one call creates the thread with `thread.message` as its starter message.
    /// Server errors are not retried: the thread may exist already, and only the caller can tell.
    public func startForumThread(in forumID: String, _ thread: DiscordForumThreadCreate) async throws(DiscordError)
        -> DiscordForumThread
    {
        var request = Request(
            method: .POST, template: "/channels/{channel_id}/threads", path: "/channels/\(try Self.id(forumID))/threads",
            major: forumID, body: try Self.body(thread, files: thread.message.files), retriesServerErrors: false)
        // New conversations come through every replica at once: the forum's bucket is shared.
        request.sharedBucket = true
        return try await send(request, as: DiscordForumThread.self)
    }

    /// Posts into a channel or thread. With a nonce and `enforceNonce` the post is retried on
    /// server errors, since Discord returns the earlier message for a repeated nonce.
    public func createMessage(in channelID: String, _ message: DiscordMessageCreate) async throws(DiscordError)
        -> DiscordMessage
    {
        try await send(
            Request(
                method: .POST, template: "/channels/{channel_id}/messages",
                path: "/channels/\(try Self.id(channelID))/messages", major: channelID,
                body: try Self.body(message, files: message.files), retriesServerErrors: message.enforceNonce),
            as: DiscordMessage.self)
    }

    /// One message.
    public func message(_ messageID: String, in channelID: String) async throws(DiscordError) -> DiscordMessage {
        try await send(
            Request(
                method: .GET, template: "/channels/{channel_id}/messages/{message_id}",
                path: "/channels/\(try Self.id(channelID))/messages/\(try Self.id(messageID))", major: channelID,
                retriesServerErrors: true),
            as: DiscordMessage.self)
    }

    /// Replaces a message's text (the bot's own messages only); mentions stay off.
    public func editMessage(_ messageID: String, in channelID: String, content: String) async throws(DiscordError) -> DiscordMessage {
        try await editMessage(messageID, in: channelID, DiscordMessageEdit(content: content))
    }

    /// Edits a message of the bot: its text, its buttons, or both.
    public func editMessage(_ messageID: String, in channelID: String, _ edit: DiscordMessageEdit) async throws(DiscordError) -> DiscordMessage {
        try await send(
            Request(
                method: .PATCH, template: "/channels/{channel_id}/messages/{message_id}",
                path: "/channels/\(try Self.id(channelID))/messages/\(try Self.id(messageID))", major: channelID,
                body: try Self.body(edit, files: []), retriesServerErrors: true),
            as: DiscordMessage.self)
    }

    public func deleteMessage(_ messageID: String, in channelID: String) async throws(DiscordError) {
        try await send(
            Request(
                method: .DELETE, template: "/channels/{channel_id}/messages/{message_id}",
                path: "/channels/\(try Self.id(channelID))/messages/\(try Self.id(messageID))", major: channelID,
                retriesServerErrors: true))
    }

    /// One page of a channel's messages, newest first, as Discord returns them.
    public func messages(in channelID: String, before: String? = nil, after: String? = nil, limit: Int = 50)
        async throws(DiscordError) -> [DiscordMessage]
    {
        var query = [("limit", String(limit))]
        if let before { query.append(("before", try Self.id(before))) }
        if let after { query.append(("after", try Self.id(after))) }
        return try await send(
            Request(
                method: .GET, template: "/channels/{channel_id}/messages",
                path: "/channels/\(try Self.id(channelID))/messages", major: channelID, query: query,
                retriesServerErrors: true),
            as: [DiscordMessage].self)
    }

    public func activeThreads(guildID: String) async throws(DiscordError) -> DiscordActiveThreads {
        try await send(
            Request(
                method: .GET, template: "/guilds/{guild_id}/threads/active",
                path: "/guilds/\(try Self.id(guildID))/threads/active", major: guildID, retriesServerErrors: true),
            as: DiscordActiveThreads.self)
    }

    /// `GET /channels/{forum}/threads/archived/public`: archived threads, newest archived first;
    /// `before` (an ISO 8601 timestamp) pages back.
    public func archivedPublicThreads(in channelID: String, before: String? = nil, limit: Int = 100) async throws(DiscordError)
        -> DiscordArchivedThreads
    {
        var query = [("limit", String(min(max(limit, 2), 100)))]
        if let before { query.append(("before", before)) }
        return try await send(
            Request(
                method: .GET, template: "/channels/{channel_id}/threads/archived/public",
                path: "/channels/\(try Self.id(channelID))/threads/archived/public", major: channelID, query: query,
                retriesServerErrors: true),
            as: DiscordArchivedThreads.self)
    }

    public func triggerTyping(in channelID: String) async throws(DiscordError) {
        try await send(
            Request(
                method: .POST, template: "/channels/{channel_id}/typing", path: "/channels/\(try Self.id(channelID))/typing",
                major: channelID, retriesServerErrors: true))
    }

    /// Adds the bot's reaction; `emoji` is a unicode emoji or `name:id`.
    public func addReaction(_ emoji: String, to messageID: String, in channelID: String) async throws(DiscordError) {
        try await send(
            Request(
                method: .PUT, template: "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me",
                path: "/channels/\(try Self.id(channelID))/messages/\(try Self.id(messageID))/reactions/\(Self.reactionPath(emoji))/@me",
                major: channelID, retriesServerErrors: true))
    }

    /// Removes the bot's own reaction (Discord answers 204 also when there was none).
    public func removeOwnReaction(_ emoji: String, from messageID: String, in channelID: String) async throws(DiscordError) {
        try await send(
            Request(
                method: .DELETE, template: "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me",
                path: "/channels/\(try Self.id(channelID))/messages/\(try Self.id(messageID))/reactions/\(Self.reactionPath(emoji))/@me",
                major: channelID, retriesServerErrors: true))
    }

    private static func reactionPath(_ emoji: String) -> String {
        emoji.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(.init(charactersIn: ":"))) ?? emoji
    }

    /// Fresh signed URLs for attachment URLs that expired or are about to (at most 50 a call).
    public func refreshAttachmentURLs(_ urls: [String]) async throws(DiscordError) -> [DiscordRefreshedURL] {
        guard !urls.isEmpty else { return [] }
        let answer = try await send(
            Request(
                method: .POST, template: "/attachments/refresh-urls", path: "/attachments/refresh-urls", major: "",
                body: try Self.body(DiscordRefreshURLsRequest(attachment_urls: Array(urls.prefix(50))), files: []), retriesServerErrors: true),
            as: DiscordRefreshURLsResponse.self)
        return answer.refreshedUrls
    }

    /// Archives or locks a thread (`PATCH /channels/{id}`).
    public func modifyThread(
        _ threadID: String, archived: Bool? = nil, locked: Bool? = nil, appliedTags: [String]? = nil
    ) async throws(DiscordError) -> DiscordChannel {
        try await send(
            Request(
                method: .PATCH, template: "/channels/{channel_id}", path: "/channels/\(try Self.id(threadID))",
                major: threadID, body: try Self.body(ThreadPatch(archived: archived, locked: locked, appliedTags: appliedTags), files: []),
                retriesServerErrors: true),
            as: DiscordChannel.self)
    }

    /// Deletes a thread and every message in it (`DELETE /channels/{id}`, Manage Threads). A
    /// retry after a server error finds it gone (10003), which the caller takes as done.
    public func deleteChannel(_ channelID: String) async throws(DiscordError) {
        try await send(
            Request(
                method: .DELETE, template: "/channels/{channel_id}", path: "/channels/\(try Self.id(channelID))", major: channelID,
                retriesServerErrors: true))
    }

    private struct ThreadPatch: Encodable {
        var archived: Bool?
        var locked: Bool?
        var appliedTags: [String]?

        enum CodingKeys: String, CodingKey {
            case archived, locked, appliedTags = "applied_tags"
        }
    }

    /// Replaces a forum's tags (`available_tags`, at most 20): tags left out are deleted, so pass
    /// every existing tag to keep, by its id.
    public func modifyForumTags(_ forumID: String, _ tags: [DiscordForumTagEdit]) async throws(DiscordError) -> DiscordChannel {
        try await send(
            Request(
                method: .PATCH, template: "/channels/{channel_id}", path: "/channels/\(try Self.id(forumID))",
                major: forumID, body: try Self.body(["available_tags": tags], files: []), retriesServerErrors: true),
            as: DiscordChannel.self)
    }

    /// Refuses anything but a snowflake before it can reach a URL path.
    static func id(_ value: String) throws(DiscordError) -> String {
        guard !value.isEmpty, value.count <= 20, value.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw .api(DiscordAPIError(status: 400, code: .invalidFormBody, message: "Not a snowflake: \(value)", errors: nil))
        }
        return value
    }

    static func body<T: Encodable>(_ value: T, files: [DiscordFile]) throws(DiscordError) -> Request.Body {
        let data: Data
        do {
            data = try encoder.encode(value)
        } catch {
            throw .invalidResponse("cannot encode request: \(error)")
        }
        return files.isEmpty ? .json(data) : .multipart(payload: data, files: files)
    }
}

/// `PATCH /channels/{channel_id}/messages/{message_id}` (and an interaction's `@original`): what
/// is nil stays as it is; empty `components` removes the buttons. Mentions are off.
public struct DiscordMessageEdit: Sendable, Hashable, Encodable {
    public var content: String?
    public var components: [DiscordActionRow]?
    public var allowedMentions: DiscordAllowedMentions

    public init(content: String? = nil, components: [DiscordActionRow]? = nil, allowedMentions: DiscordAllowedMentions = .none) {
        (self.content, self.components, self.allowedMentions) = (content, components, allowedMentions)
    }

    private enum CodingKeys: String, CodingKey { case content, components, allowedMentions = "allowed_mentions" }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(content, forKey: .content)
        try container.encodeIfPresent(components, forKey: .components)
        try container.encode(allowedMentions, forKey: .allowedMentions)
    }
}
