import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import TestSupport

/// A real `text/event-stream` client on its own connection: reads `GET /v1/events` as it
/// arrives and parses it into events (the way a browser's EventSource does).
final class EventStreamClient: Sendable {
    struct Event: Sendable, Equatable, CustomStringConvertible {
        var id: String?
        var name: String
        var data: String

        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any] ?? [:] }
        var description: String { "\(id ?? "-") \(name) \(data)" }
    }

    private struct State {
        var events: [Event] = []
        var comments = 0
        var status: UInt = 0
        var headers: HTTPHeaders = [:]
        var ended = false
        /// The response ended with an error (a reset connection) rather than its end.
        var failed = false
        var buffer = ""
    }

    private let state = Mutex(State())
    private let task = Mutex<Task<Void, Never>?>(nil)
    /// Moves with every chunk read and at the end, so a test awaits the stream's state.
    private let changes = Watched(0)

    var events: [Event] { state.withLock { $0.events } }
    var comments: Int { state.withLock { $0.comments } }
    var status: UInt { state.withLock { $0.status } }
    var headers: HTTPHeaders { state.withLock { $0.headers } }
    var ended: Bool { state.withLock { $0.ended } }
    /// Ended, and the server finished the response properly.
    var endedCleanly: Bool { state.withLock { $0.ended && !$0.failed } }
    var lastEventID: String? { events.last { $0.id != nil }?.id }

    /// Streams hold their connections: a client whose pool is not the bottleneck of a test.
    static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// Opens the stream and waits for the response head.
    static func open(port: Int, token: String, lastEventID: String? = nil, http: HTTPClient = EventStreamClient.http) async throws -> EventStreamClient {
        let client = EventStreamClient()
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/events")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: "text/event-stream")
        if let lastEventID { request.headers.add(name: "Last-Event-ID", value: lastEventID) }
        let response = try await http.execute(request, timeout: .seconds(120))
        client.state.withLock {
            $0.status = response.status.code
            $0.headers = response.headers
        }
        client.task.withLock {
            $0 = Task {
                var failed = false
                do {
                    for try await chunk in response.body { client.consume(String(buffer: chunk)) }
                } catch {
                    failed = true
                }
                client.state.withLock {
                    $0.failed = failed
                    $0.ended = true
                }
                client.changes.update { $0 += 1 }
            }
        }
        return client
    }

    private func consume(_ text: String) {
        defer { changes.update { $0 += 1 } }
        state.withLock { state in
            state.buffer += text
            while let range = state.buffer.range(of: "\n\n") {
                let block = state.buffer[..<range.lowerBound]
                state.buffer.removeSubrange(..<range.upperBound)
                var event = Event(id: nil, name: "message", data: "")
                var isEvent = false
                for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                    if line.hasPrefix(":") {
                        state.comments += 1
                    } else if line.hasPrefix("id: ") {
                        event.id = String(line.dropFirst(4))
                        isEvent = true
                    } else if line.hasPrefix("event: ") {
                        event.name = String(line.dropFirst(7))
                        isEvent = true
                    } else if line.hasPrefix("data: ") {
                        event.data += String(line.dropFirst(6))
                        isEvent = true
                    }
                }
                if isEvent && !event.data.isEmpty { state.events.append(event) }
            }
        }
    }

    /// Events named `name`.
    func events(named name: String) -> [Event] { events.filter { $0.name == name } }

    /// Waits until an event satisfies `match`, and returns it. The deadline is for a stream that
    /// never sends it: a loaded machine (eight tests, two busy loops) may take seconds to.
    @discardableResult
    func next(_ what: String, timeout: Duration = .seconds(60), after count: Int = 0, _ match: @escaping (Event) -> Bool) async throws -> Event {
        try await changes.wait(for: what, timeout: timeout) { _ in events.dropFirst(count).contains(where: match) }
        return events.dropFirst(count).first(where: match)!
    }

    /// Waits until the stream has sent at least `count` comments (keep-alives).
    func comments(reach count: Int, _ what: String, timeout: Duration = .seconds(60)) async throws {
        try await changes.wait(for: what, timeout: timeout) { _ in comments >= count }
    }

    /// Waits until the response has ended (`what` names why it should).
    func ends(_ what: String, timeout: Duration = .seconds(120)) async throws {
        try await changes.wait(for: what, timeout: timeout) { _ in ended }
    }

    /// Waits until each of `streams` has ended.
    static func allEnd(_ streams: [EventStreamClient], _ what: String, timeout: Duration = .seconds(120)) async throws {
        for stream in streams { try await stream.ends(what, timeout: timeout) }
    }

    func close() {
        task.withLock { $0?.cancel() }
    }
}
