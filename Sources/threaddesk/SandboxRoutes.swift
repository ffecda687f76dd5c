import APNsEmulator
import DiscordEmulator
import Foundation
import HTTPTypes
import Hummingbird
import ThreadDeskCore
import NIOCore
import ThreadDeskServer

/// The sandbox's own pages: the agent console (the forum as Discord shows it, replies and
/// notes as the support agent, a message's buttons and modals, the pushes the APNs emulator
/// received) and a widget that plays the app user. Mounted only by `threaddesk sandbox`; not part of the public API.
struct SandboxRoutes: Sendable {
    let discord: DiscordEmulator
    let apns: APNsEmulator
    /// The sandbox's apps: the widget opens as either, the console shows both forums.
    let catalog: AppCatalog
    /// The apps' webhook deliveries, received here.
    let webhooks: SandboxWebhooks

    struct ThreadView: Codable, Sendable {
        var id: String
        var name: String
        /// The name of the app whose forum the thread is in.
        var app: String
        var archived: Bool
        var locked: Bool
        var messages: [MessageView]
        /// The names of the thread's forum tags (the status tags among them).
        var tags: [String]
        /// The app user is typing (the bot's typing indicator is on).
        var userTyping: Bool
    }

    struct MessageView: Codable, Sendable {
        var id: String
        /// `app` for what ThreadDesk posted for the user, `agent` for the support agent (also
        /// when ThreadDesk spoke for them through the forum's webhook).
        var author: String
        /// The name Discord shows on the message.
        var authorName: String
        var isNote: Bool
        var content: String
        var attachments: [String]
        /// The emulator's signed CDN URLs of those attachments (the console shows images).
        var attachmentURLs: [String]
        var timestamp: String
        /// Reactions on it: the read receipt (👀) marks the newest reply the user has read.
        var reactions: [String]
        /// The buttons under it, row after row (a draft note's Send / Edit / Discard).
        var buttons: [ButtonView]
    }

    struct ButtonView: Codable, Sendable {
        var label: String
        /// As Discord draws it: `primary`, `secondary`, `success`, `danger` or `link`.
        var style: String
        /// What a click sends back (none for a link button).
        var customId: String?
        var url: String?
        var disabled: Bool

        init(_ button: DiscordEmulator.ButtonSnapshot) {
            let styles = [1: "primary", 2: "secondary", 3: "success", 4: "danger", 5: "link"]
            (label, style, customId, url, disabled) = (button.label ?? "", styles[button.style] ?? "secondary", button.customID, button.url, button.disabled)
        }
    }

    struct PushView: Codable, Sendable {
        var deviceToken: String
        var title: String?
        var body: String?
        var badge: Int?
        var threadID: String?
        var receivedAt: Date
    }

    struct State: Codable, Sendable {
        var threads: [ThreadView]
        var pushes: [PushView]
        var webhooks: [SandboxWebhooks.Entry] = []
    }

    struct Reply: Decodable {
        struct File: Decodable {
            var filename: String
            var contentType: String?
            var base64: String
        }
        var content: String
        var note: Bool?
        var attachments: [File]?
    }

    func register(on router: Router<ThreadDeskRequestContext>) {
        let sandbox = router.group("sandbox")
        router.get("/") { _, _ in Response(status: .seeOther, headers: [.location: "/sandbox/console"]) }
        sandbox.get("console") { _, _ in Self.page(PackageResources.console_html, type: "text/html; charset=utf-8") }
        sandbox.get("widget") { _, _ in Self.page(PackageResources.widget_html, type: "text/html; charset=utf-8") }
        sandbox.get("sandbox.css") { _, _ in Self.page(PackageResources.sandbox_css, type: "text/css; charset=utf-8") }
        // The sample app MyShop crashing, as MetricKit writes it: the widget's crash report.
        sandbox.get("sample-crash.json") { _, _ in Self.page(SandboxCrashes.samplePayload, type: "application/json; charset=utf-8") }
        // The keys a widget (or a test run against the sandbox) needs; sandbox secrets only.
        sandbox.get("api/config") { _, _ in try Self.json(config()) }
        sandbox.get("api/state") { _, _ in try Self.json(state()) }
        // The agent starts typing (as Discord's client does while a reply is being written).
        sandbox.post("api/threads/:id/typing") { _, context in
            do {
                try discord.typeAsAgent(inThread: context.parameters.get("id") ?? "")
                return Response(status: .noContent)
            } catch {
                return try Self.json(["error": ["code": "discord_refused", "message": "\(error)"]], status: .badRequest)
            }
        }
        // A slash command typed in the console's command box, run as the agent runs it in Discord.
        sandbox.post("api/threads/:id/commands") { request, context in
            struct Line: Decodable { var line: String }
            guard let bytes = try? await request.body.collect(upTo: 16 * 1024),
                let body = try? JSONDecoder().decode(Line.self, from: Data(bytes.readableBytesView))
            else {
                return try Self.json(["error": ["code": "invalid_command", "message": "Send {\"line\": \"/user\"}."]], status: .badRequest)
            }
            do {
                let answer = try await SandboxDesk.run(body.line, in: context.parameters.get("id") ?? "", on: discord)
                return try Self.json(["content": answer.content ?? "", "ephemeral": answer.ephemeral ? "true" : "false"])
            } catch let problem as SandboxDesk.Problem {
                return try Self.json(["error": ["code": "invalid_command", "message": problem.message]], status: .badRequest)
            } catch {
                return try Self.json(["error": ["code": "discord_refused", "message": "\(error)"]], status: .badRequest)
            }
        }
        sandbox.post("api/threads/:id/replies") { request, context in
            let id = context.parameters.get("id") ?? ""
            guard let bytes = try? await request.body.collect(upTo: 16 * 1024 * 1024) else {
                return try Self.json(["error": ["code": "body_too_large", "message": "A reply is at most 16 MiB."]], status: .contentTooLarge)
            }
            guard let reply = try? JSONDecoder().decode(Reply.self, from: Data(bytes.readableBytesView)), reply.content.count <= 2000,
                !reply.content.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty || !(reply.attachments ?? []).isEmpty
            else {
                return try Self.json(
                    ["error": ["code": "invalid_reply", "message": "content must be 1–2000 characters (or attach a file)."]], status: .badRequest)
            }
            let files = (reply.attachments ?? []).compactMap { file in
                Data(base64Encoded: file.base64).map { DiscordEmulator.UploadedFile(filename: file.filename, contentType: file.contentType, data: $0) }
            }
            do {
                let posted = reply.note == true
                    ? try discord.postNote(inThread: id, content: reply.content)
                    : try discord.replyAsAgent(inThread: id, content: reply.content, attachments: files)
                return try Self.json(["id": posted.id], status: .created)
            } catch {
                return try Self.json(["error": ["code": "discord_refused", "message": "\(error)"]], status: .badRequest)
            }
        }
        registerInteractions(on: sandbox)
        webhooks.register(on: sandbox)
    }

    struct Config: Codable, Sendable {
        struct App: Codable, Sendable {
            var id: String
            var name: String
            var appKey: String
        }
        /// The first app's key and legacy key (what the pages used before there were two apps).
        var appKey: String
        var legacyKey: String?
        var apps: [App]
    }

    func config() -> Config {
        let first = catalog.apps[0]
        return Config(
            appKey: first.appKey, legacyKey: first.legacyAPIKey, apps: catalog.apps.map { .init(id: $0.id.rawValue, name: $0.name, appKey: $0.appKey) })
    }

    func state() -> State {
        let tagNames = discord.tagNames
        // The apps' forums' threads; the FAQ forum's posts are curated answers, not conversations.
        let threads = discord.threads().reversed().compactMap { thread -> ThreadView? in
            guard let app = thread.parentID.flatMap(catalog.app(forForum:)) else { return nil }
            return ThreadView(
                id: thread.id, name: thread.name, app: app.name, archived: thread.archived, locked: thread.locked,
                messages: discord.messages(inThread: thread.id).map { message in
                    MessageView(
                        id: message.id, author: message.authorIsBot && message.webhookID == nil ? "app" : "agent", authorName: message.authorName,
                        isNote: NoteMarkers.startsNote(message.content), content: message.content,
                        attachments: message.attachmentNames, attachmentURLs: message.attachmentURLs, timestamp: message.timestamp,
                        reactions: message.reactions, buttons: message.buttons.map(ButtonView.init))
                },
                tags: thread.appliedTags.compactMap { tagNames[$0] },
                userTyping: thread.botTypingAt.map { Date().timeIntervalSince($0) < 10 } ?? false)
        }
        let pushes = apns.deliveries.reversed().map { delivery in
            let aps = delivery.aps
            let alert = aps["alert"] as? [String: Any]
            return PushView(
                deviceToken: delivery.deviceToken, title: alert?["title"] as? String, body: alert?["body"] as? String,
                badge: aps["badge"] as? Int, threadID: aps["thread-id"] as? String, receivedAt: delivery.receivedAt)
        }
        return State(threads: Array(threads), pushes: Array(pushes), webhooks: webhooks.log)
    }

    static func page(_ bytes: [UInt8], type: String) -> Response {
        Response(status: .ok, headers: [.contentType: type, .cacheControl: "no-store"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }
}
