import DiscordREST
import NIOFoundationCompat
import Synchronization
import Foundation
import Hummingbird
import NIOCore

/// Discord REST v10 routes, with Discord's validation order and error codes.
extension DiscordEmulator {
    func addRESTRoutes(to router: Router<BasicRequestContext>) {
        let world = self.world
        let configuration = self.configuration

        rest(router, .get, "/users/@me", bucket: .route) { _ in .ok(world.bot.selfJSON) }

        // The bot's application, as its owner's token sees it (discord.py reads its id at login).
        rest(router, .get, "/oauth2/applications/@me", bucket: .route) { _ in .ok(world.applicationJSON) }

        rest(router, .get, "/gateway", bucket: .route) { _ in .ok(["url": .string(world.gatewayURL)]) }

        rest(router, .get, "/gateway/bot", bucket: .route) { _ in
            let budget = world.state.withLock { $0.identifyBudget(now: configuration.clock.now, configuration) }
            return .ok([
                "url": .string(world.gatewayURL),
                "shards": 1,
                "session_start_limit": [
                    "total": JSON(configuration.identifyBudget), "remaining": JSON(budget.remaining),
                    "reset_after": JSON(Int(budget.resetAfter / .milliseconds(1))), "max_concurrency": JSON(configuration.maxConcurrency),
                ],
            ])
        }

        rest(router, .get, "/channels/{channel_id}", bucket: .route) { call throws(DiscordFailure) in
            .ok(try world.channel(try call.snowflake("channel_id")))
        }

        rest(router, .patch, "/channels/{channel_id}", bucket: .route) { call throws(DiscordFailure) in
            let body = call.body.object
            let id = try call.snowflake("channel_id")
            if let available = body["available_tags"] {
                return .ok(try world.modifyForumTags(id, try RESTPayloads.forumTags(available)))
            }
            var tags: [Snowflake]?
            if let applied = body["applied_tags"]?.arrayValue {
                guard applied.count <= 5 else {
                    throw .invalidForm(["applied_tags"], code: "BASE_TYPE_MAX_LENGTH", message: "Must be 5 or fewer in length.")
                }
                tags = try applied.map { (value) throws(DiscordFailure) -> Snowflake in
                    try RESTPayloads.snowflake(json: value, field: "applied_tags")
                }
            }
            if let name = body["name"]?.stringValue, !(1...100).contains(name.utf16.count) {
                throw .invalidForm(["name"], code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and 100 in length.")
            }
            // An archived thread takes a change only with `archived: false` in the same request.
            if world.isArchivedThread(id), body["archived"]?.boolValue != false { throw .archivedThread }
            return .ok(
                try world.modifyThread(
                    id, name: body["name"]?.stringValue,
                    archived: body["archived"]?.boolValue, locked: body["locked"]?.boolValue, appliedTags: tags))
        }

        rest(router, .delete, "/channels/{channel_id}", bucket: .route) { call throws(DiscordFailure) in
            .ok(try world.deleteChannel(try call.snowflake("channel_id")))
        }

        rest(router, .post, "/channels/{channel_id}/threads", bucket: .threadCreate) { call throws(DiscordFailure) in
            let body = call.body.object
            guard let name = body["name"]?.stringValue else {
                throw .invalidForm(["name"], code: "BASE_TYPE_REQUIRED", message: "This field is required")
            }
            guard (1...100).contains(name.utf16.count) else {
                throw .invalidForm(["name"], code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and 100 in length.")
            }
            let duration = body["auto_archive_duration"]?.intValue ?? 4320
            guard RESTPayloads.autoArchiveDurations.contains(duration) else {
                throw .invalidForm(
                    ["auto_archive_duration"], code: "BASE_TYPE_CHOICES",
                    message: "Value must be one of {60, 1440, 4320, 10080}.")
            }
            let applied = body["applied_tags"]?.arrayValue ?? []
            guard applied.count <= 5 else {
                throw .invalidForm(["applied_tags"], code: "BASE_TYPE_MAX_LENGTH", message: "Must be 5 or fewer in length.")
            }
            let tags = try applied.map { (value) throws(DiscordFailure) -> Snowflake in
                try RESTPayloads.snowflake(json: value, field: "applied_tags")
            }
            guard let messageObject = body["message"]?.objectValue else {
                throw .invalidForm(["message"], code: "BASE_TYPE_REQUIRED", message: "This field is required")
            }
            let message = try RESTPayloads.newMessage(
                messageObject, files: call.body.files, path: ["message"], ids: world.ids,
                maxFileSize: configuration.maxFileSize)
            let thread = try world.startForumThread(
                in: try call.snowflake("channel_id"), name: name, autoArchiveDuration: duration, appliedTags: tags,
                message: message)
            return RESTReply(status: .created, json: thread)
        }

        rest(router, .post, "/channels/{channel_id}/messages", bucket: .messagePost) { call throws(DiscordFailure) in
            let message = try RESTPayloads.newMessage(
                call.body.object, files: call.body.files, path: [], ids: world.ids,
                maxFileSize: configuration.maxFileSize)
            let posted = try world.postMessage(message, to: try call.snowflake("channel_id"), author: world.bot.id)
            return .ok(posted.message)
        }

        rest(router, .get, "/channels/{channel_id}/messages", bucket: .route) { call throws(DiscordFailure) in
            let limitText = call.query["limit"] ?? "50"
            guard let limit = Int(limitText) else {
                throw .invalidForm(["limit"], code: "NUMBER_TYPE_COERCE", message: "Value \"\(limitText)\" is not int.")
            }
            guard (1...100).contains(limit) else {
                throw .invalidForm(
                    ["limit"], code: limit < 1 ? "NUMBER_TYPE_MIN" : "NUMBER_TYPE_MAX",
                    message: limit < 1 ? "int value should be greater than or equal to 1."
                        : "int value should be less than or equal to 100.")
            }
            return .ok(
                try world.messages(
                    in: try call.snowflake("channel_id"),
                    before: try RESTPayloads.snowflake(call.query["before"], field: "before"),
                    after: try RESTPayloads.snowflake(call.query["after"], field: "after"),
                    around: try RESTPayloads.snowflake(call.query["around"], field: "around"),
                    limit: limit))
        }

        rest(router, .get, "/channels/{channel_id}/messages/{message_id}", bucket: .route) {
            call throws(DiscordFailure) in
            .ok(try world.message(try call.snowflake("message_id"), in: try call.snowflake("channel_id")))
        }

        rest(router, .patch, "/channels/{channel_id}/messages/{message_id}", bucket: .route) {
            call throws(DiscordFailure) in
            // The emulator asks for something to change: text, buttons (`[]` removes them), or both.
            let edit = try RESTPayloads.messageEdit(call.body.object, path: [])
            guard !edit.isEmpty else {
                throw .invalidForm(["content"], code: "BASE_TYPE_REQUIRED", message: "This field is required")
            }
            return .ok(
                try world.editMessage(try call.snowflake("message_id"), in: try call.snowflake("channel_id"), edit, editor: world.bot.id))
        }

        rest(router, .delete, "/channels/{channel_id}/messages/{message_id}", bucket: .route) {
            call throws(DiscordFailure) in
            try world.deleteMessage(try call.snowflake("message_id"), in: try call.snowflake("channel_id"))
            return .noContent
        }

        rest(router, .post, "/channels/{channel_id}/typing", bucket: .route) { call throws(DiscordFailure) in
            try world.startTyping(in: try call.snowflake("channel_id"), user: world.bot.id)
            return .noContent
        }

        rest(router, .delete, "/channels/{channel_id}/messages/{message_id}/reactions/{emoji_name}/@me", bucket: .route) {
            call throws(DiscordFailure) in
            let emoji = call.parameters["emoji_name"]?.removingPercentEncoding ?? ""
            guard Self.isValidReactionEmoji(emoji) else { throw .unknownEmoji }
            try world.removeReaction(emoji, from: try call.snowflake("message_id"), in: try call.snowflake("channel_id"))
            return .noContent
        }

        rest(router, .put, "/channels/{channel_id}/messages/{message_id}/reactions/{emoji_name}/@me", bucket: .route) {
            call throws(DiscordFailure) in
            let emoji = call.parameters["emoji_name"]?.removingPercentEncoding ?? ""
            guard Self.isValidReactionEmoji(emoji) else { throw .unknownEmoji }
            try world.addReaction(emoji, to: try call.snowflake("message_id"), in: try call.snowflake("channel_id"))
            return .noContent
        }

        rest(router, .get, "/guilds/{guild_id}", bucket: .route) { call throws(DiscordFailure) in
            .ok(try world.guild(try call.snowflake("guild_id")))
        }

        rest(router, .get, "/guilds/{guild_id}/roles", bucket: .route) { call throws(DiscordFailure) in
            .ok(try world.guildRoles(try call.snowflake("guild_id")))
        }

        rest(router, .get, "/guilds/{guild_id}/members/{user_id}", bucket: .route) { call throws(DiscordFailure) in
            .ok(try world.guildMember(try call.snowflake("guild_id"), user: try call.snowflake("user_id")))
        }

        rest(router, .get, "/channels/{channel_id}/threads/archived/public", bucket: .route) { call throws(DiscordFailure) in
            let limitText = call.query["limit"] ?? "50"
            guard let limit = Int(limitText), (2...100).contains(limit) else {
                throw .invalidForm(["limit"], code: "NUMBER_TYPE_MAX", message: "int value should be between 2 and 100.")
            }
            var before: Date?
            if let text = call.query["before"] {
                guard let date = ISO8601.date(text) else {
                    throw .invalidForm(["before"], code: "DATE_TIME_TYPE_PARSE", message: "Could not parse \(text). Should be ISO8601.")
                }
                before = date
            }
            return .ok(try world.archivedPublicThreads(in: try call.snowflake("channel_id"), before: before, limit: limit))
        }

        rest(router, .post, "/guilds/{guild_id}/channels", bucket: .route) { call throws(DiscordFailure) in
            let body = call.body.object
            guard let name = body["name"]?.stringValue else {
                throw .invalidForm(["name"], code: "BASE_TYPE_REQUIRED", message: "This field is required")
            }
            let tags = (body["available_tags"]?.arrayValue ?? []).map { $0["name"]?.stringValue ?? "" }
            let channel = try world.createGuildChannel(
                guild: try call.snowflake("guild_id"), name: name, type: body["type"]?.intValue ?? 0, availableTags: tags, by: world.bot.id)
            return RESTReply(status: .created, json: channel)
        }

        rest(router, .get, "/guilds/{guild_id}/threads/active", bucket: .route) { call throws(DiscordFailure) in
            .ok(try world.activeThreads(guild: try call.snowflake("guild_id")))
        }

        rest(router, .post, "/attachments/refresh-urls", bucket: .route) { call throws(DiscordFailure) in
            guard let urls = call.body.object["attachment_urls"]?.arrayValue, !urls.isEmpty, urls.count <= 50,
                urls.allSatisfy({ $0.stringValue != nil })
            else {
                throw .invalidForm(["attachment_urls"], code: "BASE_TYPE_BAD_LENGTH", message: "Must be between 1 and 50 in length.")
            }
            let refreshed = world.refreshURLs(urls.compactMap(\.stringValue))
            return .ok(["refreshed_urls": .array(refreshed.map { ["original": .string($0.original), "refreshed": .string($0.refreshed)] })])
        }

        // The CDN: attachment URLs point here, signed; an expired or forged one is a 404, as Discord's is.
        router.get("/attachments/:channel/:attachment/:filename") { request, context -> Response in
            let query = request.uri.queryParameters
            guard let channel = context.parameters.get("channel").flatMap(Snowflake.init),
                let attachmentID = context.parameters.get("attachment").flatMap(Snowflake.init),
                let attachment = world.attachment(attachmentID, in: channel),
                world.isValidSignature(
                    path: DiscordWorld.attachmentPath(channelID: channel, attachment: attachment),
                    ex: query["ex"].map(String.init), issued: query["is"].map(String.init), hm: query["hm"].map(String.init))
            else {
                world.state.withLock { $0.counters.cdnRefusals += 1 }
                return Response(
                    status: .notFound, headers: [.contentType: "text/plain"],
                    body: .init(byteBuffer: ByteBuffer(string: "This content is no longer available.")))
            }
            let redirect = world.state.withLock { state in
                state.counters.cdnAcceptEncodings.append(request.headers[.acceptEncoding] ?? "")
                guard state.faults.cdnRedirects > 0 else {
                    state.counters.cdnDownloads += 1
                    return false
                }
                state.faults.cdnRedirects -= 1
                return true
            }
            if redirect {
                return Response(status: .found, headers: [.location: "\(world.baseURL)/not-the-cdn/\(attachment.id)"])
            }
            return Self.cdnResponse(attachment, range: request.headers[.range])
        }

        // Where `redirectCDNDownloads` sends a download: anything but the attachment.
        router.get("/not-the-cdn/:name") { _, _ -> Response in
            world.state.withLock { $0.counters.offCDNRequests += 1 }
            return Response(
                status: .ok, headers: [.contentType: "text/html"],
                body: .init(byteBuffer: ByteBuffer(string: "<script>not from Discord's CDN</script>")))
        }
    }

    /// The bytes, whole or one `bytes=` range of them (206), as a CDN serves them.
    static func cdnResponse(_ attachment: EmulatedAttachment, range: String?) -> Response {
        let data = attachment.data
        var headers: HTTPFields = [.contentType: attachment.contentType ?? "application/octet-stream", .acceptRanges: "bytes"]
        guard let range, range.hasPrefix("bytes="), !range.contains(",") else {
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(data: data)))
        }
        let bounds = range.dropFirst("bytes=".count).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        let total = data.count
        var lower: Int?
        var upper = total - 1
        if bounds.count == 2, bounds[0].isEmpty, let suffix = Int(bounds[1]), suffix > 0 {
            lower = max(0, total - suffix)
        } else if bounds.count == 2, let first = Int(bounds[0]) {
            lower = first
            if let last = Int(bounds[1]) { upper = min(last, total - 1) } else if !bounds[1].isEmpty { lower = nil }
        }
        guard let lower, lower <= upper, lower < total else {
            headers[.contentRange] = "bytes */\(total)"
            return Response(status: .rangeNotSatisfiable, headers: headers)
        }
        headers[.contentRange] = "bytes \(lower)-\(upper)/\(total)"
        return Response(
            status: .partialContent, headers: headers,
            body: .init(byteBuffer: ByteBuffer(data: data[data.startIndex + lower...data.startIndex + upper])))
    }

    /// A unicode emoji (no ASCII letters) or a custom `name:id`.
    static func isValidReactionEmoji(_ emoji: String) -> Bool {
        if emoji.isEmpty { return false }
        let parts = emoji.split(separator: ":")
        if parts.count == 2 { return Snowflake(String(parts[1])) != nil }
        return emoji.unicodeScalars.allSatisfy { !$0.isASCII }
    }
}
