import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ThreadDeskClient {
    /// The conversation's live events, for as long as the caller iterates: the stream of
    /// `GET /v1/events`, reconnected with backoff and resumed with `Last-Event-ID` so nothing is
    /// missed or repeated; when the stream keeps failing, new messages are polled for and the
    /// stream is tried again later. Stop iterating (or cancel the task) to close it.
    ///
    /// - Parameter lastEventID: resume after this event id (a ``LiveUpdate/position`` of an
    ///   earlier sequence, from ``updates(resumingAfter:)``).
    public nonisolated func events(resumingAfter lastEventID: String? = nil) -> AsyncStream<ThreadDeskEvent> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1000)) { continuation in
            let task = Task {
                var feed = LiveFeedState(lastEventID: lastEventID)
                await self.runEvents(&feed) { event, _ in continuation.yield(event) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The live events with their stream positions: what ``events(resumingAfter:)`` delivers,
    /// each with the position to resume after once it is handled (kept by an app that stops the
    /// stream in the background and resumes it in the foreground without gaps or repeats).
    public nonisolated func updates(resumingAfter lastEventID: String? = nil) -> AsyncStream<LiveUpdate> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1000)) { continuation in
            let task = Task {
                var feed = LiveFeedState(lastEventID: lastEventID)
                await self.runEvents(&feed) { event, position in continuation.yield(LiveUpdate(event: event, position: position)) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    typealias EventSink = @Sendable (ThreadDeskEvent, _ position: String?) -> Void

    /// Where a sequence of events stands: the stream position, and which messages it delivered
    /// (so a poll and a stream replay never announce one twice).
    struct LiveFeedState: Sendable {
        var lastEventID: String?
        var newestMessageID: String?
        var delivered: [String] = []
        var failures = 0

        mutating func firstDelivery(of id: String) -> Bool {
            guard !delivered.contains(id) else { return false }
            delivered.append(id)
            if delivered.count > 1000 { delivered.removeFirst(delivered.count - 1000) }
            if newestMessageID.map({ Self.isNewer(id, than: $0) }) ?? true { newestMessageID = id }
            return true
        }

        static func isNewer(_ id: String, than other: String) -> Bool {
            id.count != other.count ? id.count > other.count : id > other
        }
    }

    private func runEvents(_ feed: inout LiveFeedState, _ continuation: EventSink) async {
        while !Task.isCancelled {
            do {
                try await streamOnce(&feed, continuation)
                // A clean end (the server ends streams after a while, or shuts down): come back soon.
                feed.failures = 0
                try await pause(configuration.streamBackoff.delay(attempt: 0), continuation)
            } catch is CancellationError {
                return
            } catch let error as ThreadDeskError {
                if error.kind == .noSession { return }
                if error.isServer(status: 401) || error.isServer(status: 403) {
                    // No session or a refused token that could not be renewed: nothing to wait for.
                    return
                }
                feed.failures += 1
                let unsupported = [404, 405, 406, 501].contains { error.isServer(status: $0) }
                do {
                    if unsupported || feed.failures >= configuration.streamFailuresBeforePolling {
                        try await poll(&feed, continuation)
                    } else {
                        let wait = error.retryAfter ?? configuration.streamBackoff.delay(attempt: feed.failures - 1)
                        try await pause(wait, continuation)
                    }
                } catch {
                    return
                }
            } catch {
                return
            }
        }
    }

    private func pause(_ wait: TimeInterval, _ continuation: EventSink) async throws {
        continuation(.connection(.reconnecting(after: wait)), nil)
        try await Time.sleep(wait)
    }

    /// One connection of the stream, until it ends.
    private func streamOnce(_ feed: inout LiveFeedState, _ continuation: EventSink) async throws {
        let idleTimeout = configuration.streamIdleTimeout
        try await authorized { token throws(ThreadDeskError) in
            var request = request("v1/events", token: token)
            request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
            if let lastEventID = feed.lastEventID { request.setValue(lastEventID, forHTTPHeaderField: APIHeader.lastEventID) }
            var parser = ServerSentEventParser(lastEventID: feed.lastEventID)
            // Set from the head: nil until it came; the error answer's bytes when it is one.
            var refused: (status: Int, headers: [String: String], body: Data)?
            var opened = false
            do {
                for try await chunk in request.streamed(idleTimeout: idleTimeout) {
                    switch chunk {
                    case .head(let status, let headers):
                        if status != 200 {
                            refused = (status, headers, Data())
                        } else if headers["content-type"]?.lowercased().hasPrefix("text/event-stream") != true {
                            // A proxy or server that answers something else: as good as no stream.
                            throw ThreadDeskError.server(status: 406, code: .http(status: 406), message: "not an event stream", retryAfter: nil)
                        } else {
                            opened = true
                            continuation(.connection(.live), feed.lastEventID)
                        }
                    case .body(let bytes):
                        if refused != nil {
                            if refused!.body.count < 65_536 { refused!.body.append(bytes) }
                            continue
                        }
                        guard opened else { continue }
                        for event in try parser.feed(bytes) {
                            guard let event = try ThreadDeskEvent(event) else { continue }
                            feed.lastEventID = parser.lastEventID
                            feed.failures = 0
                            if case .messageCreated(let message) = event, !feed.firstDelivery(of: message.id) { continue }
                            continuation(event, feed.lastEventID)
                        }
                    }
                }
            } catch let failure as ServerSentEventParser.Failure {
                throw .invalidResponse("event stream: \(failure)")
            } catch let error as ThreadDeskError {
                throw error
            } catch {
                throw .transport(Task.isCancelled ? "cancelled" : error.localizedDescription)
            }
            if let refused {
                throw Transport.error(Transport.Reply(status: refused.status, headers: refused.headers, body: refused.body))
            }
        }
    }

    /// Polls for new messages for `streamRetryInterval`, then lets the stream be tried again.
    private func poll(_ feed: inout LiveFeedState, _ continuation: EventSink) async throws {
        continuation(.connection(.polling), feed.lastEventID)
        let until = Time.now + configuration.streamRetryInterval
        var unread: Int?
        while Time.now < until {
            try Task.checkCancellation()
            do {
                if let newest = feed.newestMessageID {
                    var more = true
                    while more {
                        let page = try await messages(after: feed.newestMessageID ?? newest, limit: 100)
                        for message in page.messages where feed.firstDelivery(of: message.id) {
                            continuation(.messageCreated(message), feed.lastEventID)
                        }
                        more = page.hasMore && !page.messages.isEmpty
                    }
                } else {
                    // Where the conversation stands now; what came before is the app's history.
                    let page = try await messages(limit: 1)
                    feed.newestMessageID = page.messages.last?.id ?? "0"
                }
                let count = try await unreadCount()
                if count != unread {
                    unread = count
                    continuation(.unread(count: count), feed.lastEventID)
                }
            } catch where error.isServer(status: 401) {
                throw CancellationError()
            } catch {
                // Polling is the fallback: a failed poll waits for the next.
            }
            try await Time.sleep(configuration.pollInterval)
        }
        feed.failures = 0
    }
}
