import Foundation
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
          --state DIR     where the session and unsent messages are kept
                          (default ~/.local/state/threaddesk-chat/HOST_PORT)
          --attest        open the session as an App Attest device: the sandbox's software
                          attester (SERVER/sandbox/attester) stands in for the Secure Enclave

        In the chat: type a line and press Enter to send it.
          /file PATH [caption]   send a file
          /diagnostics PATH      upload a JSON file as diagnostics (support sees it, the chat does not)
          /ask TEXT              the answers support wrote for questions like TEXT (the next message
                                 you send tells support which one you read)
          /read                  mark everything read
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

/// What is on the screen: each message once, in the order it arrived, and where the user's own
/// stand on their way to support (kept by ThreadDesk, sent, or refused).
actor Screen {
    private var shown: [String: MessageDelivery] = [:]
    private var lastTyping: Date?
    /// The user's messages Discord refused, newest last: `/retry` and `/delete` act on the last.
    private(set) var failed: [SupportMessage] = []

    /// Shows a message the first time it comes, and a change of its delivery after that.
    /// - Returns: Whether it was new on the screen.
    func show(_ message: SupportMessage) -> Bool {
        let delivery = message.delivery ?? .sent
        if let before = shown[message.id] {
            if message.author == .user, before != delivery {
                shown[message.id] = delivery
                report(message, delivery)
            }
            return false
        }
        shown[message.id] = delivery
        lastTyping = nil
        let who = message.author == .user ? "you" : "\(message.authorName ?? "support") (support)"
        var line = "[\(Self.time(message.createdAt))] \(who): \(message.content)"
        if message.author == .user, delivery == .queued { line += "  (sending…)" }
        for file in message.attachments { line += "\n    [file: \(file.filename), \(file.size) bytes]" }
        say(line)
        if message.author == .user, delivery == .failed { report(message, delivery) }
        return true
    }

    private func report(_ message: SupportMessage, _ delivery: MessageDelivery) {
        let excerpt = message.content.count > 40 ? message.content.prefix(40) + "…" : Substring(message.content)
        failed.removeAll { $0.id == message.id }
        switch delivery {
        case .queued: note("sending again: \(excerpt)")
        case .sent: note("sent: \(excerpt)")
        case .failed:
            failed.append(message)
            note("not delivered (\(message.deliveryError?.message ?? "refused")): \(excerpt) — /retry sends it again, /delete removes it")
        }
    }

    func forget(_ id: String) { failed.removeAll { $0.id == id } }

    func typing(until: Date) {
        guard until > Date(), lastTyping.map({ Date().timeIntervalSince($0) > 5 }) ?? true else { return }
        lastTyping = Date()
        say("support is typing…")
    }

    func note(_ text: String) { say("· \(text)") }

    static func time(_ iso: String) -> String {
        // "2026-11-23T21:44:59.123Z" → "21:44"
        guard let t = iso.firstIndex(of: "T") else { return iso }
        return String(iso[iso.index(after: t)...].prefix(5))
    }
}

struct Chat {
    let options: Options

    func run() async throws {
        let appKey = try await resolveAppKey()
        let host = "\(options.server.host ?? "server")_\(options.server.port ?? 0)"
        let state = options.state ?? Self.defaultState().appendingPathComponent(host)
        var configuration = ThreadDeskConfiguration(
            serverURL: options.server, appKey: appKey, userID: options.userID,
            sessionStore: FileSessionStore(url: state.appendingPathComponent("session.json")),
            outbox: FileOutbox(directory: state.appendingPathComponent("outbox")))
        if options.attest {
            configuration.appAttest = SandboxAttestProvider(attesterURL: options.server.appendingPathComponent("sandbox/attester"))
        }
        let client = ThreadDeskClient(configuration)
        let screen = Screen()

        let session = try await client.open(installation: ThreadDeskClient.currentInstallation().merging(["client": "threaddesk-chat"]) { $1 })
        let attested = options.attest && session.token.contains(".")
        say("Connected to \(options.server.absoluteString) as \(session.userId)\(attested ? " (an attested device)" : "").")
        let history = try await client.messages(limit: 20)
        for message in history.messages { _ = await screen.show(message) }
        for message in try await client.flushOutbox() { _ = await screen.show(message) }
        if let newest = history.messages.last(where: { $0.author == .support }) { _ = try? await client.markRead(newest.id) }
        say("Type a message and press Enter. /ask TEXT, /file PATH, /diagnostics PATH, /quit.")

        let events = Task {
            for await event in client.events() {
                switch event {
                case .messageCreated(let message), .messageUpdated(let message):
                    if await screen.show(message), message.author == .support { _ = try? await client.markRead(message.id) }
                case .typing(let until): await screen.typing(until: until)
                case .connection(.polling): await screen.note("live updates unavailable; checking every few seconds")
                case .reset: await screen.note("reconnected after a long time; /quit and start again to see everything")
                default: break
                }
            }
        }
        defer { events.cancel() }

        // The answer shown by /ask, sent with the next message.
        var suggestionShown: String?
        for await line in Self.lines() {
            let text = line.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { continue }
            do {
                if text == "/quit" { break }
                if text == "/help" {
                    say(ThreadDeskChat.usage)
                } else if text == "/retry" || text == "/delete" {
                    guard let last = await screen.failed.last else {
                        await screen.note("every message of yours reached support")
                        continue
                    }
                    if text == "/retry" {
                        _ = await screen.show(try await client.retry(last))
                    } else {
                        try await client.delete(last.id)
                        await screen.forget(last.id)
                        await screen.note("deleted")
                    }
                } else if text == "/read" {
                    if let newest = try await client.messages(limit: 1).messages.last { _ = try await client.markRead(newest.id) }
                    await screen.note("marked read")
                } else if text.hasPrefix("/file ") {
                    let parts = text.dropFirst(6).split(separator: " ", maxSplits: 1)
                    let file = try OutgoingFile(contentsOf: URL(fileURLWithPath: String(parts[0])))
                    _ = await screen.show(try await client.send(parts.count > 1 ? String(parts[1]) : "", files: [file]))
                } else if text.hasPrefix("/diagnostics ") {
                    let data = try Data(contentsOf: URL(fileURLWithPath: String(text.dropFirst(13))))
                    let result = try await client.uploadDiagnostics(json: data)
                    await screen.note("diagnostics uploaded as \(result.filename) (\(result.size) bytes)")
                } else if text.hasPrefix("/ask ") {
                    let found = try await client.suggestions(for: String(text.dropFirst(5)))
                    if found.isEmpty { await screen.note("no answer matches; write to support") }
                    for suggestion in found.prefix(3) { await screen.note("💡 \(suggestion.title)\n   \(suggestion.answer)") }
                    suggestionShown = found.first?.id
                } else if text.hasPrefix("/") {
                    await screen.note("unknown command; /help lists them")
                } else {
                    _ = await screen.show(try await client.send(text, suggestionID: suggestionShown))
                    suggestionShown = nil
                }
            } catch ThreadDeskError.pending {
                await screen.note("not confirmed yet; it will be sent when ThreadDesk answers again")
            } catch {
                await screen.note("\(error)")
            }
        }
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
