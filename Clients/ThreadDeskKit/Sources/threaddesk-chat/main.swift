import Foundation
import Observation
import ThreadDeskKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `threaddesk-chat`: support chat in a terminal, built on ThreadDeskKit alone. Against the
/// sandbox: `swift run --package-path Clients/ThreadDeskKit threaddesk-chat --server http://127.0.0.1:8080`.
@main
struct ThreadDeskChat {
    static let usage = """
        Usage: threaddesk-chat [--server URL] [--app-key KEY] [--user-id ID] [--state DIR] [--attest]

          --server URL    ThreadDesk's address (default http://127.0.0.1:8080, the sandbox's)
          --app-key KEY   the app key (or THREADDESK_APP_KEY); the sandbox's is read from it when absent
          --user-id ID    the app's own id for the user (default: one ThreadDesk makes up, kept in --state)
          --state DIR     where the session, unsent messages, attributes and activity are kept
                          (default ~/.local/state/threaddesk-chat/HOST_PORT)
          --attest        open the session as an App Attest device: the sandbox's software
                          attester (SERVER/sandbox/attester) stands in for the Secure Enclave

        In the chat: type a line and press Enter to send it.
          /file PATH [caption]   send a file
          /diagnostics PATH      upload a JSON file as diagnostics (support sees it, the chat does not)
          /ask TEXT              the answers support wrote for questions like TEXT (the next message
                                 you send tells support which one you read)
          /read                  mark everything read
          /rate N [comment]      rate the conversation support closed, 1 to 5 stars (when asked)
          /help [QUERY]          the help center: every article, or those matching QUERY
          /article ID            read an article (the next message you send tells support you read it)
          /attr KEY=VALUE ...    tell support about yourself (plan=pro seats=3 trial_ends=2026-12-31T00:00:00Z;
                                 true/false, numbers and ISO 8601 dates as such, KEY= removes it)
          /track NAME [KEY=VALUE ...]  tell support you did NAME (export_failed format=pdf)
          /commands              this list
          /retry                 send the last message support did not get again
          /delete                delete the last message support did not get
          /quit                  leave (Ctrl-D too)
        """

    static func main() async {
        let options: Options
        do {
            options = try Options(CommandLine.arguments.dropFirst())
        } catch {
            FileHandle.standardError.write(Data("\(error)\n\n\(usage)\n".utf8))
            exit(64)
        }
        do {
            try await Chat(options: options).run()
        } catch {
            FileHandle.standardError.write(Data("threaddesk-chat: \(error)\n".utf8))
            exit(1)
        }
    }
}

struct Options {
    var server = URL(string: "http://127.0.0.1:8080")!
    var appKey = ProcessInfo.processInfo.environment["THREADDESK_APP_KEY"]
    var userID: String?
    var state: URL?
    var attest = false

    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    init(_ arguments: ArraySlice<String>) throws {
        var arguments = arguments
        while let argument = arguments.popFirst() {
            if argument == "--help" || argument == "-h" { throw Invalid(description: "threaddesk-chat: support chat in a terminal.") }
            if argument == "--attest" {
                attest = true
                continue
            }
            guard let value = arguments.popFirst() else { throw Invalid(description: "\(argument) needs a value.") }
            switch argument {
            case "--server":
                guard let url = URL(string: value), url.scheme == "http" || url.scheme == "https" else {
                    throw Invalid(description: "--server must be an http(s) URL.")
                }
                server = url
            case "--app-key": appKey = value
            case "--user-id": userID = value
            case "--state": state = URL(fileURLWithPath: value)
            default: throw Invalid(description: "Unknown option \(argument).")
            }
        }
    }
}

/// What is on the screen: the conversation model's messages, each printed once as it appears,
/// then what changes about it (a message of the user's delivered, refused), support typing and
/// suggestions. Rendered again each time the model changes (`withObservationTracking`).
@MainActor
final class Screen {
    private var shown: [String: ConversationMessage.Delivery] = [:]
    /// Words of the user's messages printed while on the device, whose server copy is the same message.
    private var unconfirmed: [String: String] = [:]
    private var typing = false
    private var suggestions: [String] = []
    private var connection: SupportConversation.Connection = .connecting
    private var ratingRequest: RatingRequest?
    private let time: DateFormatter = {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm"
        return formatter
    }()

    func follow(_ conversation: SupportConversation) {
        withObservationTracking {
            render(conversation)
        } onChange: {
            Task { @MainActor in self.follow(conversation) }
        }
    }

    private func render(_ conversation: SupportConversation) {
        let messages = conversation.messages
        let local = Set(messages.lazy.filter { !$0.isConfirmed }.map(\.id))
        var vanished: [String] = []
        for (id, text) in unconfirmed where !local.contains(id) {
            vanished.append(text)
            unconfirmed[id] = nil
        }
        for message in messages {
            if let before = shown[message.id] {
                if message.isFromUser, before != message.delivery {
                    shown[message.id] = message.delivery
                    report(message, from: before)
                }
                continue
            }
            shown[message.id] = message.delivery
            if message.isFromUser, message.isConfirmed, let index = vanished.firstIndex(of: message.text) {
                // The same message, now the server's: only its delivery is news.
                vanished.remove(at: index)
                if message.delivery != .queued { report(message, from: .queued) }
                continue
            }
            if !message.isConfirmed { unconfirmed[message.id] = message.text }
            show(message)
        }
        if conversation.isSupportTyping != typing {
            typing = conversation.isSupportTyping
            if typing { say("support is typing…") }
        }
        let ids = conversation.suggestions.map(\.id)
        if ids != suggestions {
            suggestions = ids
            for suggestion in conversation.suggestions.prefix(3) { note("💡 \(suggestion.title)\n   \(suggestion.answer)") }
        }
        if conversation.ratingRequest != ratingRequest {
            ratingRequest = conversation.ratingRequest
            if ratingRequest != nil { note("support closed the conversation: how did they do? /rate 1-5 [comment]") }
        }
        if conversation.connection != connection {
            connection = conversation.connection
            if connection == .polling { note("live updates unavailable; checking every few seconds") }
        }
    }

    private func show(_ message: ConversationMessage) {
        let who: String
        if case .support(let name) = message.author {
            who = "\(name ?? "support") (\(message.isAutomatic ? "automatic answer" : "support"))"
        } else {
            who = "you"
        }
        var line = "[\(time.string(from: message.date))] \(who): \(message.text)"
        if message.isFromUser, message.delivery == .pending || message.delivery == .queued { line += "  (sending…)" }
        for file in message.files { line += "\n    [file: \(file.filename), \(file.size) bytes]" }
        say(line)
        if message.isFromUser, case .failed = message.delivery { report(message, from: .pending) }
    }

    private func report(_ message: ConversationMessage, from before: ConversationMessage.Delivery) {
        let excerpt = message.text.count > 40 ? message.text.prefix(40) + "…" : Substring(message.text)
        switch message.delivery {
        case .pending: if before != .pending { note("not confirmed yet; it will be sent when ThreadDesk answers again: \(excerpt)") }
        case .queued: if before != .pending { note("sending again: \(excerpt)") }
        case .sent: note("sent: \(excerpt)")
        case .failed(let reason):
            note("not delivered (\(reason ?? "refused")): \(excerpt) — /retry sends it again, /delete removes it")
        }
    }

    func note(_ text: String) { say("· \(text)") }
}

struct Chat {
    let options: Options

    @MainActor
    func run() async throws {
        let appKey = try await resolveAppKey()
        let host = "\(options.server.host ?? "server")_\(options.server.port ?? 0)"
        let state = options.state ?? Self.defaultState().appendingPathComponent(host)
        var configuration = ThreadDeskConfiguration(
            serverURL: options.server, appKey: appKey, userID: options.userID,
            sessionStore: FileSessionStore(url: state.appendingPathComponent("session.json")),
            outbox: FileOutbox(directory: state.appendingPathComponent("outbox")),
            userContext: FileUserContextStore(url: state.appendingPathComponent("user-context.json")))
        if options.attest {
            configuration.appAttest = SandboxAttestProvider(attesterURL: options.server.appendingPathComponent("sandbox/attester"))
        }
        let client = ThreadDeskClient(configuration)
        let session = try await client.open()
        let attested = options.attest && session.token.contains(".")
        say("Connected to \(options.server.absoluteString) as \(session.userId)\(attested ? " (an attested device)" : "").")

        var settings = SupportConversation.Options()
        settings.installation = ThreadDeskClient.currentInstallation().merging(["client": "threaddesk-chat"]) { $1 }
        let conversation = SupportConversation(
            client: client, store: FileConversationStore(url: state.appendingPathComponent("conversation.json")), options: settings)
        let help = HelpCenter(client: client, store: FileHelpCenterStore(directory: state.appendingPathComponent("help-center")))
        let screen = Screen()
        screen.follow(conversation)
        conversation.start()
        // The prompt once the conversation is live (its history on screen), or after a few seconds without a network.
        await Self.until(seconds: 10) { conversation.connection == .live && !conversation.isSynchronizing }
        say("Type a message and press Enter. /help [QUERY], /ask TEXT, /file PATH, /commands, /quit.")
        // What is on the screen is read: the chat is in front.
        let reader = Task { @MainActor in
            var seen = conversation.unreadCount
            while !Task.isCancelled {
                if conversation.unreadCount > 0, conversation.unreadCount != seen || seen > 0 { conversation.markRead() }
                seen = conversation.unreadCount
                await Self.untilChanged { conversation.unreadCount }
            }
        }
        defer { reader.cancel() }

        for await line in Self.lines() {
            let text = line.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { continue }
            do {
                if text == "/quit" { break }
                if text == "/commands" {
                    say(ThreadDeskChat.usage)
                } else if text == "/help" || text.hasPrefix("/help ") {
                    let query = text.dropFirst(5).trimmingCharacters(in: .whitespaces)
                    let found: [Article]
                    if query.isEmpty {
                        await help.browse()
                        found = help.articles
                    } else {
                        await help.search(query)
                        found = help.results
                    }
                    if help.isOffline { screen.note("offline: the articles kept on this device") }
                    if found.isEmpty { screen.note(query.isEmpty ? "the help center is empty" : "no article matches; write to support") }
                    for article in found { screen.note("\(article.title)  [/article \(article.id)]\(Self.tagList(article))") }
                } else if text.hasPrefix("/article ") {
                    let article = try await help.article(String(text.dropFirst(9)).trimmingCharacters(in: .whitespaces))
                    say("\n\(article.title)\(Self.tagList(article))\n\n\(article.text)")
                    for file in article.attachments { say("    [file: \(file.filename), \(file.size) bytes]") }
                    conversation.stillNeedHelp(article: article)
                    screen.note("still need help? write your message: support will see you read this")
                } else if text.hasPrefix("/attr ") {
                    let pairs = try Self.pairs(text.dropFirst(6))
                    try await client.setAttributes(pairs)
                    screen.note("support will see: \(pairs.keys.sorted().map { pairs[$0]! == nil ? "\($0) removed" : $0 }.joined(separator: ", "))")
                } else if text.hasPrefix("/track ") {
                    let words = text.dropFirst(7).split(separator: " ", maxSplits: 1)
                    let properties = try Self.pairs(words.count > 1 ? words[1] : "").compactMapValues { $0 }
                    try await client.track(String(words[0]), properties: properties)
                    screen.note("support will see that you did \(words[0])")
                } else if text == "/retry" || text == "/delete" {
                    guard let last = conversation.messages.last(where: { if case .failed = $0.delivery { $0.isFromUser } else { false } }) else {
                        screen.note("every message of yours reached support")
                        continue
                    }
                    if text == "/retry" {
                        conversation.retry(last)
                    } else {
                        conversation.delete(last)
                        screen.note("deleted")
                    }
                } else if text == "/read" {
                    conversation.markRead()
                    screen.note("marked read")
                } else if text == "/rate" || text.hasPrefix("/rate ") {
                    let parts = text.dropFirst(5).trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
                    guard let score = parts.first.flatMap({ Int($0) }) else {
                        screen.note("/rate N [comment]: N is 1 to 5 stars")
                        continue
                    }
                    try await conversation.rate(score: score, comment: parts.count > 1 ? String(parts[1]) : nil)
                    screen.note("rated \(String(repeating: "★", count: score))\(String(repeating: "☆", count: 5 - score)) \(score)/5, thank you")
                } else if text.hasPrefix("/file ") {
                    let parts = text.dropFirst(6).split(separator: " ", maxSplits: 1)
                    conversation.draftFiles = [try OutgoingFile(contentsOf: URL(fileURLWithPath: String(parts[0])))]
                    conversation.draft = parts.count > 1 ? String(parts[1]) : ""
                    conversation.send()
                } else if text.hasPrefix("/diagnostics ") {
                    let data = try Data(contentsOf: URL(fileURLWithPath: String(text.dropFirst(13))))
                    let result = try await client.uploadDiagnostics(json: data)
                    screen.note("diagnostics uploaded as \(result.filename) (\(result.size) bytes)")
                } else if text.hasPrefix("/ask ") {
                    // The model asks once the typing pauses; its answers appear as 💡 lines, and the
                    // first goes with the next message so support knows what was read.
                    conversation.draft = String(text.dropFirst(5))
                    await Self.until(seconds: 10) { !conversation.suggestions.isEmpty }
                    if conversation.suggestions.isEmpty { screen.note("no answer matches; write to support") }
                    conversation.suggestions.first.map(conversation.opened)
                } else if text.hasPrefix("/") {
                    screen.note("unknown command; /commands lists them")
                } else {
                    conversation.draft = text
                    conversation.send()
                }
            } catch {
                screen.note("\(error)")
            }
        }
        // What is on its way gets the time to arrive (it stays in the outbox for the next launch if not).
        await Self.until(seconds: 10) { !conversation.messages.contains { $0.delivery == .pending } }
        await conversation.stop()
    }

    /// `KEY=VALUE` words as attribute values: `true`/`false`, whole numbers, numbers and ISO 8601
    /// dates as such, anything else as text; an empty value (`KEY=`) is nil, which removes the key.
    static func pairs(_ text: Substring) throws -> [String: (any AttributeValueConvertible)?] {
        var pairs: [String: (any AttributeValueConvertible)?] = [:]
        for word in text.split(separator: " ") {
            guard let equals = word.firstIndex(of: "=") else { throw Options.Invalid(description: "\(word): write KEY=VALUE") }
            let key = String(word[..<equals]), value = String(word[word.index(after: equals)...])
            if value.isEmpty {
                pairs[key] = .some(nil)
            } else if let flag = Bool(value) {
                pairs[key] = flag
            } else if let whole = Int(value) {
                pairs[key] = whole
            } else if let number = Double(value) {
                pairs[key] = number
            } else if value.count >= 20, let date = try? Date(value, strategy: .iso8601) {
                pairs[key] = date
            } else {
                pairs[key] = value
            }
        }
        return pairs
    }

    static func tagList(_ article: Article) -> String {
        article.tags.isEmpty ? "" : "  (\(article.tags.joined(separator: ", ")))"
    }

    /// Waits until `condition` holds (checked each time the model changes), at most `seconds`.
    @MainActor
    static func until(seconds: Double, _ condition: @escaping @MainActor () -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !condition(), ContinuousClock.now < deadline {
            await untilChanged(within: deadline) { condition() }
        }
    }

    /// Returns once what `read` reads changes, or at `deadline`.
    @MainActor
    static func untilChanged<T>(within deadline: ContinuousClock.Instant? = nil, _ read: @escaping @MainActor () -> T) async {
        let changed = AsyncStream<Void>.makeStream()
        withObservationTracking { _ = read() } onChange: { changed.continuation.yield() }
        let timer = deadline.map { deadline in
            Task {
                try? await Task.sleep(until: deadline, clock: .continuous)
                changed.continuation.yield()
            }
        }
        for await _ in changed.stream { break }
        timer?.cancel()
    }

    /// The app key given, or the sandbox's (it publishes it for its own pages).
    private func resolveAppKey() async throws -> String {
        if let key = options.appKey, !key.isEmpty { return key }
        struct SandboxConfig: Decodable { var appKey: String }
        var request = URLRequest(url: options.server.appendingPathComponent("sandbox/api/config"))
        request.timeoutInterval = 10
        guard let (data, _) = try? await URLSession.shared.data(for: request),
            let config = try? JSONDecoder().decode(SandboxConfig.self, from: data)
        else {
            throw Options.Invalid(description: "no app key: pass --app-key or THREADDESK_APP_KEY (only the sandbox publishes its own)")
        }
        return config.appKey
    }

    static func defaultState() -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_STATE_HOME"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".local/state")
        return base.appendingPathComponent("threaddesk-chat")
    }

    /// Standard input, line by line, read on a thread of its own (reading blocks).
    static func lines() -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                while let line = readLine(strippingNewline: true) { continuation.yield(line) }
                continuation.finish()
            }
            thread.start()
        }
    }
}

/// A line on standard output, written at once (a pipe or terminal sees it immediately).
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
