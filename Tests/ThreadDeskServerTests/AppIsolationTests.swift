import APNsEmulator
import AsyncHTTPClient
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import SoftwareAttester
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore
import Yams

/// Two apps on one deployment: whatever app A's credentials ask for — every operation of
/// `openapi.yaml`, read at test time, with app B's ids wherever an id goes — nothing of app B's
/// comes back, and nothing of app B's changes. App A's event stream carries nothing of B's either.
@Suite("One app's credentials never reach another app's data", .timeLimit(.minutes(3)))
struct AppIsolationTests {
    static let alphaLegacyKey = "alpha-legacy-key-0123456789abcdef"
    static let betaLegacyKey = "beta-legacy-key-0123456789abcdef"
    /// A reference-system id (`xxx-xxx-xxx`) that both apps have a legacy user of.
    static let legacyID = "b3t-a00-usr"
    /// Every text, file name and file of beta's carries this (with the run's tag): a body that
    /// contains it holds something of beta's.
    static let secret = "beta-secret-"

    /// Both apps with their legacy routes (so those are walked too), App Attest optional (so its
    /// challenge route exists), and read receipts moved soon (so `settled()` sees any misplaced one).
    static func configure(_ attester: SoftwareAttester) -> @Sendable (inout ServerConfiguration) -> Void {
        let attest = attestConfiguration(attester, mode: .optional)
        return { configuration in
            attest(&configuration)
            configuration.apps?[0].legacyAPIKey = alphaLegacyKey
            configuration.apps?[1].legacyAPIKey = betaLegacyKey
            configuration.live.readReceiptDelay = .milliseconds(100)
        }
    }

    static func withTwoApps(_ body: @escaping @Sendable (Harness) async throws -> Void) async throws {
        let attester = try SoftwareAttester()
        try await withServer(gateway: true, prepare: AppsTests.twoApps(), apnsTopics: [AppsTests.betaTopic], configure(attester), body)
    }

    @Test func noOperationWithOneAppsCredentialsReachesAnotherAppsData() async throws {
        try await Self.withTwoApps { server in
            let fixture = try await Fixture.prepare(server)
            let document = try APIDocument(contentsOf: OpenAPIDocumentTests.documentURL)
            // Beta's user listens through the whole walk: nothing alpha does may show there.
            let betaStream = try await LiveTests.stream(server, fixture.betaVictim.token)
            defer { betaStream.close() }
            let beta = try await BetaIDs.collect(server, fixture, positions: betaStream.events.compactMap(\.id))
            let before = try await BetaState.read(server, fixture)
            let seenBefore = betaStream.events.count
            let pushesBefore = fixture.betaPushes(server)

            let walk = Walk(server: server, fixture: fixture, beta: beta)
            let (probes, operations) = walk.build(document)
            for probe in probes { try await walk.run(probe) }
            #expect(operations == document.operations.count, "every operation of openapi.yaml walked")
            #expect(Set(probes.map(\.operation.name)).count == operations)
            print(
                "AppIsolationTests: walked \(operations) operations of openapi.yaml with \(walk.sent) requests as alpha; "
                    + "answers: \(walk.statuses.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " "))")

            // Whatever alpha's requests started is done; beta's state is as it was.
            try await server.settled()
            let after = try await BetaState.read(server, fixture)
            #expect(after.messages == before.messages, "beta's messages, as its user sees them, changed")
            #expect(after.unread == before.unread, "beta's read state changed")
            #expect(after.legacyMessages == before.legacyMessages, "beta's legacy user's messages changed")
            #expect(after.records == before.records, "beta's user records changed")
            #expect(after.records.allSatisfy { $0?.pushToken != nil }, "beta's push tokens are still set")
            #expect(after.threads == before.threads, "beta's threads in Discord changed (name, archived, locked, tags, last message, typing)")
            #expect(after.forumThreads == before.forumThreads, "a thread was made in beta's forum")
            #expect(after.posts == before.posts, "a message in beta's threads in Discord was added, edited, deleted or reacted to")
            #expect(fixture.betaPushes(server) == pushesBefore, "a push went to beta's devices with beta's topic")

            // Beta's stream got nothing from the walk: a reply of beta's own marks the end of it.
            let marker = try server.emulator.replyAsAgent(inThread: fixture.betaThread, content: "after the walk")
            let isMarker = { (event: EventStreamClient.Event) in event.name == "message.created" && event.json["id"] as? String == marker.id }
            try await betaStream.next("beta's own reply after the walk", timeout: .seconds(60), after: seenBefore, isMarker)
            let during = betaStream.events.dropFirst(seenBefore).prefix { !isMarker($0) }
            #expect(during.isEmpty, "beta's stream got events while alpha walked: \(Array(during))")
        }
    }

    @Test func anAppsEventStreamCarriesNothingOfAnotherApp() async throws {
        try await Self.withTwoApps { server in
            let fixture = try await Fixture.prepare(server)
            let alphaUsers = [fixture.alphaVictim, fixture.alphaOther]
            var streams: [EventStreamClient] = []
            defer { streams.forEach { $0.close() } }
            for user in alphaUsers { streams.append(try await LiveTests.stream(server, user.token)) }
            let betaStream = try await LiveTests.stream(server, fixture.betaVictim.token)
            defer { betaStream.close() }

            // Beta's conversation moves: an agent's reply, the agent typing, the user's own message,
            // and a reply to beta's legacy user (whose id alpha has a legacy user of too).
            let reply = try server.emulator.replyAsAgent(inThread: fixture.betaThread, content: fixture.marker("live-reply"))
            try server.emulator.typeAsAgent(inThread: fixture.betaThread)
            let sent = try await server.send(fixture.marker("live-send"), token: fixture.betaVictim.token)
            try #require(sent.status == .created)
            let sentID = try #require(sent.json["id"]?.stringValue)
            let legacyReply = try server.emulator.replyAsAgent(inThread: fixture.betaLegacyThread, content: fixture.marker("live-legacy"))
            try await server.settled()
            // The server has handed beta's events out: beta's own stream has them.
            try await betaStream.next("beta's reply on beta's stream", timeout: .seconds(60)) { $0.json["id"] as? String == reply.id }
            try await betaStream.next("the agent typing on beta's stream", timeout: .seconds(60)) { $0.name == "typing" }
            try await betaStream.next("beta's own message on beta's stream", timeout: .seconds(60)) { $0.json["id"] as? String == sentID }

            // Then something of alpha's own: each alpha stream shows it, and nothing of beta's before it.
            for (index, stream) in streams.enumerated() {
                let own = try server.emulator.replyAsAgent(inThread: fixture.alphaThreads[index], content: "alpha's own reply \(index)")
                try await stream.next("alpha's own reply on alpha's stream", timeout: .seconds(60)) {
                    $0.name == "message.created" && $0.json["id"] as? String == own.id
                }
            }
            let beta = try await BetaIDs.collect(server, fixture, positions: [])
            let ids = Set(beta.snowflakes + [reply.id, sentID, legacyReply.id])
            for (index, stream) in streams.enumerated() {
                for event in stream.events {
                    let found = BetaIDs.leaks(in: "\(event.id ?? "") \(event.name) \(event.data)", snowflakes: ids)
                    #expect(found.isEmpty, "alpha's stream \(index) got beta's \(found): \(event)")
                }
                #expect(stream.events(named: "typing").isEmpty, "alpha's stream \(index) got beta's agent typing")
                #expect(stream.events(named: "message.created").count == 1, "alpha's stream \(index): \(stream.events)")
            }
        }
    }
}

// The walk's parts, inside the suite: their names are common words.
extension AppIsolationTests {
    // MARK: - The two apps' users

    /// Beta's user "victim" with a whole conversation (text, a file, diagnostics, device info, a push
    /// token, an agent's reply with a file) and a legacy user with one; alpha's "victim" (the same
    /// id), another alpha user, and alpha's legacy user of the same legacy id.
    struct Fixture: Sendable {
        let alpha: AppSettings
        let beta: AppSettings
        let tag: String
        let betaVictim: Harness.Session
        let betaThread: String
        let betaLegacyThread: String
        let betaDevices: [String]
        /// The idempotency keys beta's requests used.
        let betaKeys: [String]
        /// The key of beta's legacy diagnostics upload (its path).
        let betaUploadKey: String
        let betaDiagnosticsID: String?
        let alphaVictim: Harness.Session
        let alphaOther: Harness.Session
        let alphaThreads: [String]

        func marker(_ what: String) -> String { "\(AppIsolationTests.secret)\(what)-\(tag)" }

        /// Pushes to beta's devices under beta's topic.
        func betaPushes(_ server: Harness) -> Int {
            betaDevices.map { server.apns.deliveries(to: $0).filter { $0.topic == AppsTests.betaTopic }.count }.reduce(0, +)
        }

        static func prepare(_ server: Harness) async throws -> Fixture {
            let apps = server.configuration.catalog.apps
            try #require(apps.map(\.id.rawValue) == ["alpha", "beta"])
            let (alpha, beta) = (apps[0], apps[1])
            let tag = String(UUID().uuidString.prefix(8)).lowercased()
            let marker = { (what: String) in "\(AppIsolationTests.secret)\(what)-\(tag)" }
            let legacyID = AppIsolationTests.legacyID

            // Beta's "victim": device info, a push token, a text, a file, diagnostics, an agent's reply with a file.
            let victim = try await AppsTests.open(server, key: beta.appKey, user: "victim").decode(Harness.Session.self)
            let installed = try await server.request(.put, "/v1/installation", token: victim.token, json: #"{"appVersion":"\#(marker("install"))"}"#)
            try #require(installed.status == .ok)
            let devices = [String(repeating: "b1", count: 32), String(repeating: "b2", count: 32)]
            let pushToken = try await server.request(.put, "/v1/push-token", token: victim.token, json: #"{"token":"\#(devices[0])","environment":"development"}"#)
            try #require(pushToken.status == .noContent)
            let keys = (0..<3).map { "beta-idempotency-\($0)-\(tag)" }
            try #require(try await server.send(marker("text"), token: victim.token, key: keys[0]).status == .created)
            var png = AttachmentTests.png()
            png.append(Data(marker("png-bytes").utf8))
            let withFile = try await AttachmentTests.send(
                server, token: victim.token,
                [
                    .init(name: "content", data: Data(marker("caption").utf8)),
                    .init(name: "files", filename: "\(marker("file")).png", contentType: "image/png", data: png),
                ], key: keys[1])
            try #require(withFile.status == .created, "\(String(decoding: withFile.body, as: UTF8.self))")
            let diagnostics = try await server.request(
                .post, "/v1/diagnostics", token: victim.token, headers: [.init("Idempotency-Key")!: keys[2]],
                json: #"{"note":"\#(marker("diagnostics"))"}"#)
            try #require(diagnostics.status == .created, "\(String(decoding: diagnostics.body, as: UTF8.self))")
            let betaThread = try #require(try await server.store.user(UserID(app: beta.id, local: UserID("victim")!))?.threadID)
            try server.emulator.replyAsAgent(
                inThread: betaThread, content: marker("reply"),
                attachments: [.init(filename: "\(marker("agent-file")).txt", contentType: "text/plain", data: Data("\(marker("agent-bytes"))\n".utf8))])
            try await server.settled()

            // Beta's legacy user, by beta's legacy key: a message with its device, a reply, diagnostics.
            let betaLegacy: HTTPFields = [.init("x-api-key")!: AppIsolationTests.betaLegacyKey]
            let legacySent = try await server.request(
                .post, "/new-message", headers: betaLegacy,
                json: #"{"content":"\#(marker("legacy"))","userId":"\#(legacyID)","apnsToken":"\#(devices[1])"}"#)
            try #require(legacySent.status == .ok, "\(String(decoding: legacySent.body, as: UTF8.self))")
            try await server.settled()
            let betaLegacyThread = try #require(try await server.store.user(UserID(app: beta.id, local: UserID(legacyID)!))?.threadID)
            try server.emulator.replyAsAgent(inThread: betaLegacyThread, content: marker("legacy-reply"))
            let uploadKey = "\(legacyID)-1700000000"
            let legacyUpload = try await server.request(
                .post, "/upload-diagnostics/\(uploadKey)", headers: betaLegacy, json: #"{"note":"\#(marker("legacy-diagnostics"))"}"#)
            try #require(legacyUpload.status == .ok)
            try await server.settled()

            // Alpha's users: "victim" too, someone else, and a legacy user of the same legacy id.
            var alphaThreads: [String] = []
            var alphaUsers: [Harness.Session] = []
            for local in ["victim", "someone-else"] {
                let user = try await AppsTests.open(server, key: alpha.appKey, user: local).decode(Harness.Session.self)
                let set = try await server.request(
                    .put, "/v1/push-token", token: user.token, json: #"{"token":"\#(String(repeating: "aa", count: 32))","environment":"development"}"#)
                try #require(set.status == .noContent)
                try #require(try await server.send("hello from alpha's \(local)", token: user.token).status == .created)
                alphaThreads.append(try #require(try await server.store.user(UserID(app: alpha.id, local: UserID(local)!))?.threadID))
                alphaUsers.append(user)
            }
            let alphaLegacy = try await server.request(
                .post, "/new-message", headers: [.init("x-api-key")!: AppIsolationTests.alphaLegacyKey],
                json: #"{"content":"hello from alpha's legacy user","userId":"\#(legacyID)"}"#)
            try #require(alphaLegacy.status == .ok)
            try await server.settled()
            try #require(Set(alphaThreads).isDisjoint(with: [betaThread, betaLegacyThread]))

            return Fixture(
                alpha: alpha, beta: beta, tag: tag, betaVictim: victim, betaThread: betaThread, betaLegacyThread: betaLegacyThread,
                betaDevices: devices, betaKeys: keys, betaUploadKey: uploadKey, betaDiagnosticsID: diagnostics.json["messageId"]?.stringValue,
                alphaVictim: alphaUsers[0], alphaOther: alphaUsers[1], alphaThreads: alphaThreads)
        }
    }

    /// Beta's ids, as alpha's requests carry them, and what would show that an answer holds beta's data.
    struct BetaIDs {
        /// Message, attachment and thread ids: as the app sees them and as Discord keeps them.
        var snowflakes: [String]
        /// Beta's event stream positions.
        var positions: [String]
        var fixture: Fixture

        static func collect(_ server: Harness, _ fixture: Fixture, positions: [String]) async throws -> BetaIDs {
            var ids: [String] = [fixture.betaThread, fixture.betaLegacyThread]
            if let diagnostics = fixture.betaDiagnosticsID { ids.append(diagnostics) }
            for message in try await server.messages(token: fixture.betaVictim.token) {
                ids += [message["id"]?.stringValue, message["replyTo"]?.stringValue].compactMap { $0 }
                ids += (message["partIds"]?.arrayValue ?? []).compactMap(\.stringValue)
                ids += (message["attachments"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
            }
            let legacy = try await server.request(
                .get, "/messages/\(AppIsolationTests.legacyID)", headers: [.init("x-api-key")!: AppIsolationTests.betaLegacyKey])
            try #require(legacy.status == .ok)
            for message in legacy.json.arrayValue ?? [] {
                ids += [message["id"]?.stringValue].compactMap { $0 }
                ids += (message["attachments"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
            }
            for thread in [fixture.betaThread, fixture.betaLegacyThread] {
                for post in server.emulator.messages(inThread: thread) { ids += [post.id] + post.attachmentIDs }
            }
            var seen: Set<String> = []
            let snowflakes = ids.filter { !$0.isEmpty && seen.insert($0).inserted }
            try #require(snowflakes.count >= 10, "beta's conversation has its ids: \(snowflakes)")
            return BetaIDs(snowflakes: snowflakes, positions: positions, fixture: fixture)
        }

        /// What of beta's `text` holds: an id of `snowflakes` (as a whole number), or a marked text.
        static func leaks(in text: String, snowflakes: Set<String>) -> [String] {
            var found = snowflakes.filter { containsNumber(text, $0) }.sorted().map { "id \($0)" }
            if let range = text.range(of: AppIsolationTests.secret) {
                found.append("text \"\(text[range.lowerBound...].prefix(40))\"")
            }
            return found
        }

        /// Whether `number` occurs in `text` with no digit right before or after it.
        static func containsNumber(_ text: String, _ number: String) -> Bool {
            var rest = text[...]
            while let range = rest.range(of: number) {
                let before = range.lowerBound > text.startIndex ? text[text.index(before: range.lowerBound)] : " "
                let after = range.upperBound < text.endIndex ? text[range.upperBound] : " "
                if !before.isNumber && !after.isNumber { return true }
                rest = text[range.upperBound...]
            }
            return false
        }

        /// The ids of beta's that a value of `kind` may be.
        func values(_ kind: IDKind) -> [String] {
            let legacy = AppIsolationTests.legacyID
            let users = ["victim", legacy, "\(fixture.beta.id.rawValue)/victim", "\(fixture.beta.id.rawValue)/\(legacy)"]
            switch kind {
            case .snowflake: return snowflakes
            case .userID: return users
            case .legacyUserID: return [legacy, "\(fixture.beta.id.rawValue)/\(legacy)"]
            case .anyID, .anyIDList: return snowflakes + users
            case .idempotencyKey: return fixture.betaKeys + [fixture.betaUploadKey, "legacy-upload-\(fixture.betaUploadKey)"]
            case .eventPosition: return ["0", "1"] + positions + snowflakes.prefix(1)
            case .deviceToken: return fixture.betaDevices
            case .userKey: return [fixture.betaUploadKey, "\(legacy)-alpha-probe"]
            }
        }

        /// The value a required slot takes when it is not the one being tried: alpha's own, where
        /// there is such a thing; else the first of beta's.
        func neutral(_ kind: IDKind) -> String? {
            switch kind {
            case .idempotencyKey: UUID().uuidString
            case .deviceToken: String(repeating: "aa", count: 32)
            default: values(kind).first
            }
        }
    }

    /// Beta's state, as beta and Discord see it.
    struct BetaState: Equatable {
        struct Record: Equatable {
            var tokens: Set<String>
            var threadID: String?
            var pendingThread: String?
            var pushToken: String?
            var pushEnvironment: PushEnvironment?
            var installation: InstallationInfo?
            var pendingPosts: [PendingPost]
            var lastReadMessageID: String?
            var lastNotifiedMessageID: String?
        }

        struct Post: Equatable {
            var id: String
            var authorID: String
            var content: String
            var attachmentIDs: [String]
            var reactions: [String]
        }

        var messages: JSON
        var unread: JSON
        var legacyMessages: JSON
        var records: [Record?]
        var threads: [DiscordEmulator.ThreadSnapshot]
        var forumThreads: [String]
        var posts: [[Post]]

        static func read(_ server: Harness, _ fixture: Fixture) async throws -> BetaState {
            let token = fixture.betaVictim.token
            let messages = try await server.request(.get, "/v1/messages", token: token)
            let unread = try await server.request(.get, "/v1/unread", token: token)
            let legacy = try await server.request(
                .get, "/messages/\(AppIsolationTests.legacyID)", headers: [.init("x-api-key")!: AppIsolationTests.betaLegacyKey])
            try #require(messages.status == .ok && unread.status == .ok && legacy.status == .ok, "beta's own requests work")
            var records: [Record?] = []
            for local in ["victim", AppIsolationTests.legacyID] {
                let record = try await server.store.user(UserID(app: fixture.beta.id, local: UserID(local)!))
                records.append(record.map {
                    Record(
                        tokens: $0.liveTokenHashes, threadID: $0.threadID, pendingThread: $0.pendingThread, pushToken: $0.pushToken,
                        pushEnvironment: $0.pushEnvironment, installation: $0.installation, pendingPosts: $0.pendingPosts,
                        lastReadMessageID: $0.lastReadMessageID, lastNotifiedMessageID: $0.lastNotifiedMessageID)
                })
            }
            let ours = [fixture.betaThread, fixture.betaLegacyThread]
            let threads = server.emulator.threads()
            return BetaState(
                messages: messages.json, unread: unread.json, legacyMessages: legacy.json, records: records,
                threads: ours.compactMap { id in threads.first { $0.id == id } },
                forumThreads: threads.filter { $0.parentID == fixture.beta.forumChannelID }.map(\.id),
                posts: ours.map { thread in
                    server.emulator.messages(inThread: thread).map {
                        Post(id: $0.id, authorID: $0.authorID, content: $0.content, attachmentIDs: $0.attachmentIDs, reactions: $0.reactions)
                    }
                })
        }
    }

    // MARK: - The document

    /// What kind of id a parameter or body field takes: which of beta's ids alpha's requests put there.
    enum IDKind: Sendable, Hashable {
        case snowflake, userID, legacyUserID, anyID, anyIDList, idempotencyKey, eventPosition, deviceToken
        /// A legacy upload key: a user id and anything after it.
        case userKey
    }

    struct DocumentProblem: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// `openapi.yaml`, read at test time: its operations, their security, parameters and bodies.
    struct APIDocument {
        struct Parameter {
            var name: String
            var location: String
            var required: Bool
            var schema: Any?
            var description: String?
        }

        struct Operation {
            var id: String
            var method: String
            var path: String
            /// The alternatives of `security`, each the schemes needed together; `[]` is public.
            var security: [[String]]
            var parameters: [Parameter]
            /// Media type and schema of each form the request body may take.
            var bodies: [(type: String, schema: Any?)]
            /// Answered with a `text/event-stream`.
            var streams: Bool
            var name: String { "\(id) (\(method) \(path))" }
        }

        let root: [String: Any]
        let operations: [Operation]

        static let methods = ["get", "put", "post", "delete", "patch", "head", "options"]

        init(contentsOf url: URL) throws {
            guard let root = Self.dict(try Yams.load(yaml: try String(contentsOf: url, encoding: .utf8))),
                let paths = Self.dict(root["paths"])
            else { throw DocumentProblem("openapi.yaml has no paths") }
            self.root = root
            var operations: [Operation] = []
            for (path, item) in paths {
                guard let item = Self.dict(item) else { continue }
                let shared = item["parameters"] as? [Any] ?? []
                for method in Self.methods {
                    guard let operation = Self.dict(item[method]) else { continue }
                    var parameters: [Parameter] = []
                    for node in shared + (operation["parameters"] as? [Any] ?? []) {
                        let (parameter, _) = Self.resolve(node, in: root)
                        guard let name = parameter["name"] as? String, let location = parameter["in"] as? String else {
                            throw DocumentProblem("\(method.uppercased()) \(path): a parameter without a name or place")
                        }
                        parameters.removeAll { $0.name == name && $0.location == location }
                        parameters.append(
                            Parameter(
                                name: name, location: location, required: parameter["required"] as? Bool ?? (location == "path"),
                                schema: parameter["schema"], description: parameter["description"] as? String))
                    }
                    let security = (operation["security"] ?? root["security"]) as? [Any]
                    let alternatives = (security ?? []).map { (Self.dict($0) ?? [:]).keys.sorted() }
                    let (body, _) = Self.resolve(operation["requestBody"], in: root)
                    let content = Self.dict(body["content"]) ?? [:]
                    let bodies = content.keys.sorted().map { (type: $0, schema: Self.dict(content[$0])?["schema"]) }
                    let responses = Self.dict(operation["responses"]) ?? [:]
                    let streams = responses.values.contains { Self.dict(Self.resolve($0, in: root).0["content"])?["text/event-stream"] != nil }
                    operations.append(
                        Operation(
                            id: operation["operationId"] as? String ?? "\(method.uppercased()) \(path)", method: method.uppercased(),
                            path: path, security: alternatives.isEmpty ? [[]] : alternatives, parameters: parameters, bodies: bodies,
                            streams: streams))
                }
            }
            // Destructive routes (sign-out, erasure) after the rest; each in a fixed order.
            self.operations = operations.sorted { ($0.method == "DELETE" ? 1 : 0, $0.path, $0.method) < ($1.method == "DELETE" ? 1 : 0, $1.path, $1.method) }
        }

        static func dict(_ node: Any?) -> [String: Any]? {
            if let node = node as? [String: Any] { return node }
            if let node = node as? [AnyHashable: Any] { return Dictionary(node.map { ("\($0.key)", $0.value) }, uniquingKeysWith: { $1 }) }
            return nil
        }

        /// The node a `$ref` (or an `allOf` of one `$ref`) names, and the name of the last component it went through.
        static func resolve(_ node: Any?, in root: [String: Any]) -> ([String: Any], ref: String?) {
            var current = dict(node) ?? [:]
            var ref: String?
            for _ in 0..<16 {
                if let target = current["$ref"] as? String, target.hasPrefix("#/") {
                    ref = target.split(separator: "/").last.map(String.init)
                    var found: Any? = root
                    for part in target.dropFirst(2).split(separator: "/") { found = dict(found)?[String(part)] }
                    current = dict(found) ?? [:]
                } else if let all = current["allOf"] as? [Any], all.count == 1, let only = dict(all[0]), only["$ref"] != nil {
                    current = only
                } else {
                    break
                }
            }
            return (current, ref)
        }

        func resolve(_ node: Any?) -> ([String: Any], ref: String?) { Self.resolve(node, in: root) }

        static func type(of schema: [String: Any]) -> String? {
            if let type = schema["type"] as? String { return type }
            if let types = schema["type"] as? [Any], let first = types.first as? String { return first }
            return schema["properties"] != nil ? "object" : nil
        }

        /// Which of beta's ids a parameter or field takes, if it takes an id at all.
        func kind(_ schema: [String: Any], ref: String?, name: String?, description: String?) -> IDKind? {
            switch ref {
            case "Snowflake": return .snowflake
            case "UserId": return .userID
            case "LegacyUserId": return .legacyUserID
            default: break
            }
            let letters = (name ?? "").lowercased().filter(\.isLetter)
            let type = Self.type(of: schema)
            let pattern = schema["pattern"] as? String
            if letters == "idempotencykey" { return .idempotencyKey }
            if letters.contains("event") && letters.hasSuffix("id") { return .eventPosition }
            guard let name else { return nil }
            if type == "string", letters.contains("token"), pattern?.contains("0-9a-fA-F") == true { return .deviceToken }
            if type == "string", pattern?.hasPrefix("^[0-9]{1,") == true { return .snowflake }
            if type == "string", pattern == nil, schema["enum"] == nil, name.hasSuffix("Id") || name == "id" { return .anyID }
            if type == "array", name.hasSuffix("Ids") { return .anyIDList }
            if type == "string", description?.lowercased().contains("user id") == true { return .userKey }
            return nil
        }
    }

    // MARK: - The walk

    enum Step: Hashable, CustomStringConvertible {
        case field(String)
        case item
        var description: String {
            switch self {
            case .field(let name): name
            case .item: "[]"
            }
        }
    }

    /// A credential of alpha's, bound when the request is made (a user's token may have been renewed).
    enum Credential: Hashable {
        case header(String, String, label: String)
        /// The bearer token of one of alpha's users.
        case user(Int)
        /// A token made of alpha's first user's secret under another user's name.
        case forged(prefix: String)
    }

    struct Probe {
        var operation: APIDocument.Operation
        var credentials: [Credential]
        var uri: String
        var headers: [(String, String)]
        var body: Data?
        var contentType: String?
        var trying: String
        /// A forged token: only 401 is right.
        var forged: Bool
    }

    /// Alpha walks the API: builds a request for every operation of the document, with beta's ids
    /// wherever an id goes, and checks each answer.
    final class Walk {
        struct User {
            var base: String
            var local: String
            var token: String
        }

        let server: Harness
        let fixture: Fixture
        let beta: BetaIDs
        let snowflakes: Set<String>
        var users: [User]
        var sent = 0
        var statuses: [Int: Int] = [:]

        init(server: Harness, fixture: Fixture, beta: BetaIDs) {
            self.server = server
            self.fixture = fixture
            self.beta = beta
            snowflakes = Set(beta.snowflakes)
            users = [
                User(base: "victim", local: "victim", token: fixture.alphaVictim.token),
                User(base: "someone-else", local: "someone-else", token: fixture.alphaOther.token),
            ]
        }

        /// Every operation's requests; an operation none can be built for is an issue, named.
        func build(_ document: APIDocument) -> (probes: [Probe], operations: Int) {
            var probes: [Probe] = []
            var built = 0
            for operation in document.operations {
                do {
                    let made = try self.probes(for: operation, in: document)
                    guard !made.isEmpty else { throw DocumentProblem("nothing to send") }
                    probes += made
                    built += 1
                } catch {
                    Issue.record("no request built for \(operation.name): \(error)")
                }
            }
            return (probes, built)
        }

        /// Alpha's credentials for a security scheme of the document.
        func credentials(for scheme: String) throws -> [Credential] {
            switch scheme {
            case "appKey": return [.header("X-App-Key", fixture.alpha.appKey, label: "alpha's app key")]
            case "legacyKey": return [.header("x-api-key", AppIsolationTests.alphaLegacyKey, label: "alpha's legacy key")]
            case "bearer": return users.indices.map { .user($0) }
            // Alpha has no gateway secret: what it has, as the bearer.
            case "gatewaySecret":
                return [.user(0), .header("Authorization", "Bearer \(fixture.alpha.appKey)", label: "alpha's app key as the bearer")]
            // Nor the dSYM upload secret (a build's), nor the metrics token (an operator's): the same.
            case "metricsToken", "dsymsSecret":
                return [.user(0), .header("Authorization", "Bearer \(fixture.alpha.appKey)", label: "alpha's app key as the bearer")]
            default: throw DocumentProblem("no credential of alpha's for the security scheme \(scheme)")
            }
        }

        private enum Form {
            case empty
            case json(Any?)
            case multipart(Any?)
            case bytes
        }

        private enum Place: Hashable {
            case parameter(name: String, location: String)
            case body([Step])
        }

        func probes(for operation: APIDocument.Operation, in document: APIDocument) throws -> [Probe] {
            var credentialSets: [[Credential]] = []
            var forgedOnly = false
            for alternative in operation.security {
                var sets: [[Credential]] = [[]]
                for scheme in alternative {
                    let options = try credentials(for: scheme)
                    sets = sets.flatMap { set in options.map { set + [$0] } }
                }
                credentialSets += sets
                if alternative == ["bearer"] { forgedOnly = true }
            }

            // Parameters: those that take an id are tried with each of beta's; others get a sample when required.
            var slots: [(place: Place, kind: IDKind, required: Bool)] = []
            var fixed: [(APIDocument.Parameter, String)] = []
            for parameter in operation.parameters {
                let (schema, ref) = document.resolve(parameter.schema)
                if let kind = document.kind(schema, ref: ref, name: parameter.name, description: parameter.description) {
                    slots.append((place: Place.parameter(name: parameter.name, location: parameter.location), kind: kind, required: parameter.required))
                } else if parameter.required {
                    guard case .string(let sample)? = try Self.sample(schema, name: parameter.name) else {
                        throw DocumentProblem("no value for the required parameter \(parameter.name)")
                    }
                    fixed.append((parameter, sample))
                }
            }

            var forms: [Form] = []
            for body in operation.bodies {
                switch body.type {
                case "application/json": forms.append(.json(body.schema))
                case "multipart/form-data": forms.append(.multipart(body.schema))
                // Bytes that name nothing (a dSYM): sent as a probe, no id in them to vary.
                case "application/octet-stream": forms.append(.bytes)
                default: throw DocumentProblem("a body of type \(body.type)")
                }
            }
            if forms.isEmpty { forms = [.empty] }

            var requests: [(uri: String, headers: [(String, String)], body: Data?, type: String?, trying: String)] = []
            for form in forms {
                var formSlots = slots
                if case .json(let schema) = form {
                    formSlots += try bodySlots(schema, name: nil, path: [], required: true, in: document).map { (place: Place.body($0.path), kind: $0.kind, required: $0.required) }
                }
                var choices: [(Place, String)?] = [nil]
                for slot in formSlots { choices += beta.values(slot.kind).map { value -> (Place, String)? in (slot.place, value) } }
                for choice in choices {
                    var path = operation.path
                    var query: [String] = []
                    var headers: [(String, String)] = []
                    var vary: ([Step], JSON)?
                    for slot in formSlots {
                        let value: String?
                        if let choice, choice.0 == slot.place {
                            value = choice.1
                        } else {
                            value = slot.required ? beta.neutral(slot.kind) : nil
                        }
                        guard let value else {
                            if slot.required { throw DocumentProblem("no value for \(slot.place)") }
                            continue
                        }
                        switch slot.place {
                        case .parameter(let name, let location):
                            try Self.place(value, name: name, location: location, path: &path, query: &query, headers: &headers)
                        case .body(let steps):
                            if choice?.0 == slot.place { vary = (steps, slot.kind == .anyIDList ? .array([.string(value)]) : .string(value)) }
                        }
                    }
                    for (parameter, sample) in fixed {
                        try Self.place(sample, name: parameter.name, location: parameter.location, path: &path, query: &query, headers: &headers)
                    }
                    guard !path.contains("{") else { throw DocumentProblem("a path parameter without a value: \(path)") }
                    let uri = path + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
                    let trying = choice.map { "\($0.0) = \($0.1)" } ?? "base"
                    switch form {
                    case .empty:
                        requests.append((uri, headers, nil, nil, trying))
                    case .json(let schema):
                        let body = try bodyValue(schema, name: nil, path: [], required: true, vary: vary, in: document) ?? .object([:])
                        requests.append((uri, headers, body.encoded(), "application/json", trying))
                    case .multipart(let schema):
                        let (body, type) = try multipart(schema, in: document)
                        requests.append((uri, headers, body, type, trying + " (multipart)"))
                    case .bytes:
                        requests.append((uri, headers, Data("alpha probe".utf8), "application/octet-stream", trying + " (bytes)"))
                    }
                }
            }

            var probes: [Probe] = []
            for credentials in credentialSets {
                for request in requests {
                    probes.append(
                        Probe(
                            operation: operation, credentials: credentials, uri: request.uri, headers: request.headers, body: request.body,
                            contentType: request.type, trying: request.trying, forged: false))
                }
            }
            // A token of alpha's first user's secret under beta's user's name (and the default app's).
            if forgedOnly, let base = requests.first {
                for prefix in ["\(fixture.beta.id.rawValue)/victim", "victim"] {
                    probes.append(
                        Probe(
                            operation: operation, credentials: [.forged(prefix: prefix)], uri: base.uri, headers: base.headers, body: base.body,
                            contentType: base.type, trying: base.trying, forged: true))
                }
            }
            return probes
        }

        static func escaped(_ value: String) -> String {
            value.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? value
        }

        static func place(
            _ value: String, name: String, location: String, path: inout String, query: inout [String], headers: inout [(String, String)]
        ) throws {
            switch location {
            case "path": path = path.replacingOccurrences(of: "{\(name)}", with: escaped(value))
            case "query": query.append("\(escaped(name))=\(escaped(value))")
            case "header": headers.append((name, value))
            default: throw DocumentProblem("a parameter in \(location)")
            }
        }

        /// The fields of a body schema that take an id.
        /// A schema that holds itself (a MetricKit frame's `subFrames`) is walked once: `seen`, the
        /// references on the way down.
        func bodySlots(_ node: Any?, name: String?, path: [Step], required: Bool, in document: APIDocument, seen: Set<String> = []) throws
            -> [(path: [Step], kind: IDKind, required: Bool)]
        {
            guard path.count < 12 else { throw DocumentProblem("a body nested deeper than 12 at \(path)") }
            let (schema, ref) = document.resolve(node)
            if let ref, seen.contains(ref) { return [] }
            let seen = seen.union(ref.map { [$0] } ?? [])
            if let kind = document.kind(schema, ref: ref, name: name, description: schema["description"] as? String) {
                return [(path, kind, required)]
            }
            switch APIDocument.type(of: schema) {
            case "object":
                let properties = APIDocument.dict(schema["properties"]) ?? [:]
                let needed = Set(schema["required"] as? [String] ?? [])
                return try properties.keys.sorted().flatMap { key in
                    try bodySlots(properties[key], name: key, path: path + [.field(key)], required: required && needed.contains(key), in: document, seen: seen)
                }
            case "array":
                return try bodySlots(schema["items"], name: nil, path: path + [.item], required: required, in: document, seen: seen)
            default:
                return []
            }
        }

        /// A body for `node`: its required fields with samples (ids neutral), and the field at
        /// `vary`'s path (with the objects around it) set to `vary`'s value.
        func bodyValue(_ node: Any?, name: String?, path: [Step], required: Bool, vary: ([Step], JSON)?, in document: APIDocument) throws -> JSON? {
            guard path.count < 12 else { throw DocumentProblem("a body nested deeper than 12 at \(path)") }
            let (schema, ref) = document.resolve(node)
            if let kind = document.kind(schema, ref: ref, name: name, description: schema["description"] as? String) {
                if let vary, vary.0 == path { return vary.1 }
                guard required else { return nil }
                guard let value = beta.neutral(kind) else { throw DocumentProblem("no value for \(path)") }
                return kind == .anyIDList ? .array([.string(value)]) : .string(value)
            }
            switch APIDocument.type(of: schema) {
            case "object":
                let properties = APIDocument.dict(schema["properties"]) ?? [:]
                guard !properties.isEmpty else { return .object(["probe": "alpha"]) }
                let needed = Set(schema["required"] as? [String] ?? [])
                var object: [String: JSON] = [:]
                for key in properties.keys.sorted() {
                    let at = path + [.field(key)]
                    guard needed.contains(key) || (vary.map { $0.0.starts(with: at) } ?? false) else { continue }
                    let value = try bodyValue(properties[key], name: key, path: at, required: needed.contains(key), vary: vary, in: document)
                    guard let value else {
                        if needed.contains(key) { throw DocumentProblem("no value for the required field \(at)") }
                        continue
                    }
                    object[key] = value
                }
                return .object(object)
            case "array":
                let item = try bodyValue(schema["items"], name: nil, path: path + [.item], required: true, vary: vary, in: document)
                return .array(item.map { [$0] } ?? [])
            default:
                guard let value = try Self.sample(schema, name: name) else { throw DocumentProblem("no sample for \(path): \(schema)") }
                return value
            }
        }

        /// Samples for values that are not ids, each checked against the schema's pattern.
        static let samples = ["alpha probe", "probe", String(repeating: "ab", count: 32), "1", "alpha-probe-key"]

        static func sample(_ schema: [String: Any], name: String?) throws -> JSON? {
            if let options = schema["enum"] as? [Any], let first = options.first { return scalar(first) }
            if let constant = schema["const"] { return scalar(constant) }
            switch APIDocument.type(of: schema) {
            case "string":
                let minimum = schema["minLength"] as? Int ?? 0
                let maximum = schema["maxLength"] as? Int ?? .max
                var candidates = samples.filter { (minimum...maximum).contains($0.count) }
                if let pattern = schema["pattern"] as? String {
                    let expression = try NSRegularExpression(pattern: pattern)
                    candidates = candidates.filter { expression.firstMatch(in: $0, range: NSRange($0.startIndex..., in: $0)) != nil }
                }
                return candidates.first.map(JSON.string)
            case "integer", "number": return .number(schema["minimum"] as? Double ?? (schema["minimum"] as? Int).map(Double.init) ?? 1)
            case "boolean": return .bool(false)
            case "null": return .null
            default: return nil
            }
        }

        static func scalar(_ value: Any) -> JSON? {
            switch value {
            case let value as String: .string(value)
            case let value as Bool: .bool(value)
            case let value as Int: .number(Double(value))
            case let value as Double: .number(value)
            default: nil
            }
        }

        /// A multipart body: a text part for each text field, a small text file for each file field.
        func multipart(_ node: Any?, in document: APIDocument) throws -> (Data, String) {
            let (schema, _) = document.resolve(node)
            var parts: [AttachmentTests.Part] = []
            for (key, value) in (APIDocument.dict(schema["properties"]) ?? [:]).sorted(by: { $0.key < $1.key }) {
                let (field, _) = document.resolve(value)
                let item = document.resolve(field["items"]).0
                let isFile = field["format"] as? String == "binary" || item["format"] as? String == "binary"
                if isFile {
                    parts.append(.init(name: key, filename: "alpha-probe.txt", contentType: "text/plain", data: Data("alpha probe file\n".utf8)))
                } else if APIDocument.type(of: field) == "string" {
                    parts.append(.init(name: key, data: Data("alpha multipart probe".utf8)))
                }
            }
            guard !parts.isEmpty else { throw DocumentProblem("a multipart body with no part to send") }
            return AttachmentTests.multipart(parts)
        }

        // MARK: Making the requests

        /// Alpha's user `index` with a live token: one that a sign-out or an erasure ended is replaced
        /// by a new session (of the same id when it is free again), with a conversation.
        func alive(_ index: Int) async throws -> User {
            let user = users[index]
            let id = UserID(app: fixture.alpha.id, local: try #require(UserID(user.local)))
            if try await server.store.user(id)?.holdsToken(hash: UserToken.hash(user.token)) == true { return user }
            for attempt in 1...20 {
                let local = attempt == 1 ? user.base : "\(user.base)-\(attempt)"
                let opened = try await AppsTests.open(server, key: fixture.alpha.appKey, user: local)
                guard opened.status == .created else {
                    try #require(opened.status == .conflict, "a new session for alpha's \(local): \(opened.status)")
                    continue
                }
                let session = try opened.decode(Harness.Session.self)
                try #require(try await server.send("alpha's \(local) again", token: session.token).status == .created)
                users[index] = User(base: user.base, local: local, token: session.token)
                return users[index]
            }
            throw DocumentProblem("no new session for alpha's \(user.base)")
        }

        func label(_ credentials: [Credential]) -> String {
            guard !credentials.isEmpty else { return "no credentials" }
            return credentials.map {
                switch $0 {
                case .header(_, _, let label): label
                case .user(let index): "alpha's \(users[index].local)"
                case .forged(let prefix): "a forged token for \(prefix)"
                }
            }.joined(separator: " + ")
        }

        func run(_ probe: Probe) async throws {
            var headers = HTTPFields()
            for credential in probe.credentials {
                switch credential {
                case .header(let name, let value, _):
                    headers[try #require(HTTPField.Name(name))] = value
                case .user(let index):
                    headers[.authorization] = "Bearer \(try await alive(index).token)"
                case .forged(let prefix):
                    let secret = try #require(try await alive(0).token.split(separator: "~").last)
                    headers[.authorization] = "Bearer \(prefix)~\(secret)"
                }
            }
            for (name, value) in probe.headers { headers[try #require(HTTPField.Name(name))] = value }
            let method = try #require(HTTPRequest.Method(probe.operation.method))
            let reply: Harness.Reply
            if probe.operation.streams && method == .get {
                reply = try await Self.stream(port: try #require(server.client.port), uri: probe.uri, headers: headers)
            } else {
                reply = try await server.request(method, probe.uri, headers: headers, raw: probe.body, contentType: probe.contentType ?? "application/json")
            }
            sent += 1
            statuses[reply.status.code, default: 0] += 1
            if ProcessInfo.processInfo.environment["APP_ISOLATION_TRACE"] != nil {
                print("\(reply.status.code) \(probe.operation.name) as \(label(probe.credentials)), \(probe.trying)")
            }

            let what = "\(probe.operation.name) as \(label(probe.credentials)), \(probe.trying): \(probe.operation.method) \(probe.uri)"
            let text = String(decoding: reply.body, as: UTF8.self)
            #expect(reply.status.code < 500, "\(what) answered \(reply.status.code): \(text.prefix(300))")
            let answer = text + "\n" + reply.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
            let leaked = BetaIDs.leaks(in: answer, snowflakes: snowflakes)
            #expect(leaked.isEmpty, "\(what) answered beta's \(leaked): \(text.prefix(500))")
            if probe.forged { #expect(reply.status == .unauthorized, "\(what) answered \(reply.status.code) to a forged token") }
        }

        /// `GET` of an event stream: its answer up to the first `unread` event (every stream's first
        /// after any replay), or the whole answer when it is not a stream.
        static func stream(port: Int, uri: String, headers: HTTPFields) async throws -> Harness.Reply {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(uri)")
            for field in headers { request.headers.add(name: field.name.rawName, value: field.value) }
            request.headers.add(name: "Accept", value: "text/event-stream")
            let response = try await EventStreamClient.http.execute(request, timeout: .seconds(60))
            var fields = HTTPFields()
            for header in response.headers { if let name = HTTPField.Name(header.name) { fields.append(.init(name: name, value: header.value)) } }
            guard response.status == .ok else {
                let body = try await response.body.collect(upTo: 1 << 20)
                return Harness.Reply(status: .init(code: Int(response.status.code)), headers: fields, body: Data(buffer: body))
            }
            let received = Watched<(text: String, ended: Bool)>(("", false))
            let reader = Task {
                do {
                    for try await chunk in response.body { received.update { $0.text += String(buffer: chunk) } }
                } catch {}
                received.update { $0.ended = true }
            }
            defer { reader.cancel() }
            try await received.wait(for: "the first unread event of GET \(uri)", timeout: .seconds(60)) { $0.ended || Self.hasUnread($0.text) }
            return Harness.Reply(status: .ok, headers: fields, body: Data(received.value.text.utf8))
        }

        static func hasUnread(_ text: String) -> Bool {
            guard let range = text.range(of: "event: unread\n") else { return false }
            return text[range.upperBound...].contains("\n\n")
        }
    }
}
