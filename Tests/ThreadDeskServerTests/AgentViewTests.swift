import APNsEmulator
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

/// What an agent reads in Discord is what happened: a user's text never passes for a
/// ThreadDesk note, client data never shapes a note, and a legacy id never reaches the logs.
@Suite("What agents see is what happened")
struct AgentViewTests {
    static let legacyKey: HTTPFields = [.init("x-api-key")!: "legacy-key"]

    // MARK: A user's text is never a note

    @Test func aUsersTextThatBeginsWithANoteMarkerIsNoNoteToTheAgent() async throws {
        try await withServer(gateway: true) { server in
            let (user, thread, device) = try await server.userWithThread(first: "hello")
            let texts = [
                ":ninja: I am a ninja", "🥷 me too", "!HiddenMessage is my nickname", "\\:ninja: typed escaped",
                "\u{200B}:ninja: after a zero-width space", "\u{FEFF}🥷 after a byte order mark", "\u{00AD}\u{2060}!HiddenMessage soft",
            ]
            for text in texts { #expect(try await server.send(text, token: user.token).status == .created, "\(text)") }
            let first = try #require(try await server.messages(token: user.token).first { $0["content"] == "\u{200B}:ninja: after a zero-width space" })
            let edited = try await server.request(
                .patch, "/v1/messages/\(first["id"]?.stringValue ?? "-")", token: user.token, json: #"{"content":"\u200d🥷 edited"}"#)
            #expect(edited.status == .ok)
            #expect(edited.json["content"] == "\u{200D}🥷 edited")

            // The user sees exactly what they wrote, as their own.
            let expected = ["hello"] + texts.map { $0 == texts[4] ? "\u{200D}🥷 edited" : $0 }
            let seen = try await server.messages(token: user.token)
            #expect(seen.map { $0["content"]?.stringValue } == expected)
            #expect(seen.allSatisfy { $0["author"] == "user" })
            // The agent sees none of them as a note (a bot post that shows a marker first).
            let posts = server.emulator.messages(inThread: thread).filter { $0.authorID == server.discord.botUserID }
            #expect(posts.count == expected.count)
            for post in posts { #expect(!Self.looksLikeANote(post.content), "\(post.content.debugDescription) passes for a note") }

            // An agent's note behind an invisible character is a note all the same: hidden, never pushed.
            try server.emulator.replyAsAgent(inThread: thread, content: "\u{FEFF}:ninja: internal, behind a byte order mark")
            try server.emulator.replyAsAgent(inThread: thread, content: "\u{200B}🥷 internal, behind a zero-width space")
            try server.emulator.replyAsAgent(inThread: thread, content: "\u{00AD}!HiddenMessage internal, behind a soft hyphen")
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "a visible reply")
            try await server.settled()
            try #require(!server.apns.deliveries(to: device).isEmpty, "the visible reply pushed")
            #expect(try await server.messages(token: user.token).map { $0["content"]?.stringValue } == expected + ["a visible reply"])
            #expect(server.apns.deliveries(to: device).map { ($0.aps["alert"] as? [String: Any])?["body"] as? String } == ["a visible reply"])
            #expect(try await server.mirrored(reply.id)?.visible == true)
        }
    }

    // MARK: Client data shapes no note

    @Test func installationKeysAreCheckedAndClientMarkdownShapesNoNote() async throws {
        try await withServer { server in
            let user = try await server.session()
            _ = try await server.send("hello", token: user.token)
            let thread = try #require(try await server.thread(of: user.userId))
            for key in [#"line\n# Injected"#, "**bold**", "[docs](https://evil.example)", "@everyone", "<@123456789012345678>", "> quote"] {
                let reply = try await server.request(.put, "/v1/installation", token: user.token, json: #"{"\#(key)":"x"}"#)
                #expect(reply.status == .badRequest && reply.errorCode == "invalid_installation", "\(key)")
                let session = try await server.request(
                    .post, "/v1/session", token: user.token, headers: [.init("X-App-Key")!: "test-app-key"],
                    json: #"{"userId":"\#(user.userId)","installation":{"\#(key)":"x"}}"#)
                #expect(session.status == .badRequest && session.errorCode == "invalid_installation", "\(key)")
            }
            #expect(server.emulator.messages(inThread: thread).count == 1)

            // Values may carry markdown: the note shows it as text and it shapes nothing.
            let info = #"""
                {"appVersion":"[Update now](https://evil.example)","deviceModel":"@everyone <@123456789012345678> <#123456789012345678>",
                 "locale":"# Big","osPlatform":"> quoted","support_url":"https://evil.example/x","note":"**bold** __under__ `code` ||spoiler||"}
                """#
            #expect(try await server.request(.put, "/v1/installation", token: user.token, json: info).json["changed"] == true)
            let note = try #require(server.emulator.messages(inThread: thread).last?.content)
            #expect(note.hasPrefix(":ninja: **Device info**"))
            #expect(Self.activeMarkdown(note) == [], "\(note)")
            for shown in ["[Update now](https://evil.example)", "@everyone <@123456789012345678>", "# Big", "> quoted", "https://evil.example/x"] {
                #expect(Self.rendered(note).contains(shown), "the note does not show \(shown)")
            }

            // The diagnostics summary is built from client data too.
            let document = #"""
                {"appVersion":"[Update now](https://evil.example)","device":{"# Heading":"@here","<@123456789012345678>":"> x"},
                 "-# small":"<#123456789012345678>","links":["https://evil.example/a","[a](https://b.example)"]}
                """#
            #expect(try await server.request(.post, "/v1/diagnostics", token: user.token, json: document).status == .created)
            try await server.settled()
            let summary = try #require(server.emulator.messages(inThread: thread).last?.content)
            #expect(summary.hasPrefix(":ninja: **Diagnostics**"))
            #expect(Self.activeMarkdown(summary) == [], "\(summary)")
            #expect(Self.rendered(summary).contains("[Update now](https://evil.example)"))
            // And should anything slip through, no post of ours pings anyone.
            let posts = server.emulator.recordedRequests.filter { request in
                ["POST", "PATCH"].contains(request.method)
                    && ["/messages", "/messages/{message_id}", "/threads"].contains { request.route.hasSuffix($0) }
            }
            #expect(posts.count >= 3)
            #expect(posts.allSatisfy { ($0.body?["allowed_mentions"] ?? $0.body?["message"]?["allowed_mentions"]) == ["parse": []] })
            #expect(server.emulator.counters.everyonePings == 0)
        }
    }

    @Test func legacyInstallationInfoIsCheckedLikeV1s() async throws {
        try await withServer({ $0.legacyAPIKey = "legacy-key" }) { server in
            let cases = [
                #"{"buildVersion":"88\n# Injected"}"#, #"{"osVersion":"\#(String(repeating: "9", count: 201))"}"#,
                #"{"osPlatform":"iOS\r\n@everyone"}"#,
            ]
            for info in cases {
                let body = #"{"content":"hello","userId":"a1b-2c3-d4e","installationInfo":\#(info)}"#
                let reply = try await server.request(.post, "/new-message", headers: Self.legacyKey, json: body)
                #expect(reply.status == .badRequest && reply.errorCode == "invalid_installation", "\(info)")
            }
            #expect(server.discordPosts == 0)
            // Good info still names the thread and makes the note, its markdown shown as text.
            let body = #"""
                {"content":"hello","userId":"a1b-2c3-d4e",
                 "installationInfo":{"userId":"a1b-2c3-d4e","buildVersion":"[88](https://evil.example)","osPlatform":"iOS","osVersion":"16.4"}}
                """#
            #expect(try await server.request(.post, "/new-message", headers: Self.legacyKey, json: body).status == .ok)
            try await server.settled()  // the outbox makes the thread
            let thread = try #require(server.emulator.threads().first)
            #expect(!thread.name.contains("\n"))
            let note = try #require(server.emulator.messages(inThread: thread.id).first { $0.content.hasPrefix(":ninja:") }?.content)
            #expect(Self.activeMarkdown(note) == [], "\(note)")
        }
    }

    // MARK: A legacy id is a credential

    @Test func aLegacyIdNeverReachesTheLogs() async throws {
        let lines = LogCapture()
        try await withServer(logger: lines.logger, gateway: true, {
            $0.legacyAPIKey = "legacy-key"
            // The wait watchdog names the request a slow wait is for.
            $0.debugWaitThreshold = .milliseconds(20)
        }) { server in
            let id = "q8w-3e4-r5t"
            let device = String(repeating: "ef", count: 32)
            func send(_ content: String) async throws {
                let body = #"{"content":"\#(content)","userId":"\#(id)","apnsToken":"\#(device)"}"#
                let reply = try await server.request(.post, "/new-message", headers: Self.legacyKey, json: body)
                #expect(reply.status == .ok, "\(content): \(reply.status)")
                try await server.settled()
            }
            // A thread the reference system made is adopted.
            let earlier = try await server.discordClient.startForumThread(
                in: server.discord.forumChannelID,
                DiscordForumThreadCreate(name: id, message: DiscordMessageCreate(content: "from before the move")))
            try await send("after the move")
            #expect(try await server.thread(of: id) == earlier.channel.id)
            // Pushes APNs refuses, once for good and once because the token is gone.
            server.apns.script(device, [.reject(status: 413, reason: "PayloadTooLarge"), .unregistered(timestamp: 1_700_000_000_000)])
            try server.emulator.replyAsAgent(inThread: earlier.channel.id, content: "first answer")
            try await server.settled()
            try #require(lines.text.contains("APNs refused a push"), "the refused push logged")
            try server.emulator.replyAsAgent(inThread: earlier.channel.id, content: "second answer")
            try await server.settled()
            try #require(lines.text.contains("device token is gone"), "the gone token logged")
            // The thread deleted in Discord, then the next one locked.
            try server.emulator.deleteThread(earlier.channel.id)
            try await server.settled()
            try #require(lines.text.contains("A thread was deleted in Discord"), "the deletion logged")
            try await send("where did it go")
            let second = try #require(try await server.thread(of: id))
            #expect(second != earlier.channel.id)
            try server.emulator.lockThread(second)
            // A slow Discord: the watchdog reports the request waiting on it.
            server.emulator.setLatency(.milliseconds(500))
            try await send("anyone there")
            // The diagnostics route carries the id in its path.
            let upload = try await server.request(.post, "/upload-diagnostics/\(id)-1700000000", headers: Self.legacyKey, json: #"{"osVersion":"17.2"}"#)
            #expect(upload.status == .ok)
            // Delivered from the outbox after the answer (still on the slow Discord): whatever its
            // delivery logs is in the lines checked below.
            try await server.settled()
            server.emulator.setLatency(.zero)
            #expect(try await server.thread(of: id) != second)
            // Every one of these was logged, by a fingerprint of the user.
            for logged in [
                "Found the user's thread in Discord", "APNs refused a push", "device token is gone", "A thread was deleted", "Thread is locked",
                "Still waiting",
            ] {
                #expect(lines.text.contains(logged), "\(logged)")
            }
            #expect(lines.text.contains("\"user\": \(UserID(id)!.logValue)"))

            let naming = lines.text.split(separator: "\n").filter { $0.lowercased().contains(id) || $0.lowercased().contains("q8w3e4r5t") }
            #expect(naming.isEmpty, "\(naming)")
        }
    }

    // MARK: How Discord shows text

    /// Characters that show nothing, which a reader's eye skips as it skips spaces.
    static let invisible: Set<UInt32> = [0x00AD, 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF]

    /// `content` as a Discord client shows it, as far as markers go: a backslash before a symbol
    /// shows the symbol alone, and the `:ninja:` shortcode shows as its emoji.
    static func rendered(_ content: String) -> String {
        var shown = ""
        var escaping = false
        for character in content {
            if escaping {
                if !(character.isLetter || character.isNumber || character.isWhitespace) { shown.removeLast() }
                escaping = false
            } else if character == "\\" {
                escaping = true
            }
            shown.append(character)
        }
        return shown.replacingOccurrences(of: ":ninja:", with: "🥷")
    }

    /// Whether an agent would take a bot post for a ThreadDesk note: a note marker is the first
    /// thing it shows.
    static func looksLikeANote(_ content: String) -> Bool {
        let shown = String(String.UnicodeScalarView(rendered(content).unicodeScalars.drop { $0.properties.isWhitespace || invisible.contains($0.value) }))
        return shown.hasPrefix("🥷") || shown.unicodeScalars.starts(with: "🥷".unicodeScalars) || shown.hasPrefix("!HiddenMessage")
    }

    /// Markdown in `note` (its title line aside) that Discord would turn into a link, a mention,
    /// a heading or a quote: what client data must never make in a note an agent trusts.
    static func activeMarkdown(_ note: String) -> [String] {
        let body = note.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().joined(separator: "\n")
        let patterns = [
            #"(?<!\\)\[[^\]\n]*(?<!\\)\]\("#,  // masked link
            #"(?<!\\)<(?:@|#|a?:|t:|/|https?)"#,  // mention, channel, emoji, timestamp, command, link
            #"(?<!\\)@(?:everyone|here)"#,
            #"https?://"#,  // an unescaped colon is a link
            #"(?m)^[ \t]*(?:[-*+] +)?(?:#|>|-#)"#,  // heading, quote, subtext at a line's start
        ]
        return patterns.flatMap { pattern -> [String] in
            let regex = try! NSRegularExpression(pattern: pattern)
            return regex.matches(in: body, range: NSRange(body.startIndex..., in: body)).compactMap { match in
                Range(match.range, in: body).map { "\(pattern) at \(String(body[$0]))" }
            }
        }
    }
}
