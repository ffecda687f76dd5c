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
    /// - Parameter lastEventID: resume after this event id (from ``lastDeliveredEventID``).
    public nonisolated func events(resumingAfter lastEventID: String? = nil) -> AsyncStream<ThreadDeskEvent> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1000)) { continuation in
            let task = Task {
                var feed = LiveFeedState(lastEventID: lastEventID)
                await self.runEvents(&feed, continuation)
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

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

    private func runEvents(_ feed: inout LiveFeedState, _ continuation: AsyncStream<ThreadDeskEvent>.Continuation) async {
        while !Task.isCancelled {
            do {
                try await streamOnce(&feed, continuation)
                // A clean end (the server ends streams after a while, or shuts down): come back soon.
                feed.failures = 0
                try await pause(configuration.streamBackoff.delay(attempt: 0), continuation)
            } catch is CancellationError {
                return
            } catch let error as ThreadDeskError {
                if case .server(let status, _, _, _) = error, status == 401 || status == 403 {
                    // No session or a refused token that could not be renewed: nothing to wait for.
                    return
                }
                feed.failures += 1
                let unsupported: Bool
                if case .server(let status, _, _, _) = error { unsupported = [404, 405, 406, 501].contains(status) } else { unsupported = false }
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

    private func pause(_ wait: Duration, _ continuation: AsyncStream<ThreadDeskEvent>.Continuation) async throws {
        continuation.yield(.connection(.reconnecting(after: wait)))
        try await Task.sleep(for: wait)
    }

    /// One connection of the stream, until it ends.
    private func streamOnce(_ feed: inout LiveFeedState, _ continuation: AsyncStream<ThreadDeskEvent>.Continuation) async throws {
        let lastEventID = feed.lastEventID
        var chunks = try await authorized { token throws(ThreadDeskError) in
            var request = request("v1/events", token: token)
            request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
            if let lastEventID { request.setValue(lastEventID, forHTTPHeaderField: APIHeader.lastEventID) }
            return try await Self.open(request, idleTimeout: configuration.streamIdleTimeout)
        }
        var parser = ServerSentEventParser(lastEventID: lastEventID)
        continuation.yield(.connection(.live))
        do {
            while let chunk = try await chunks.next(isolation: self) {
                guard case .body(let bytes) = chunk else { continue }
                for event in try parser.feed(bytes) {
                    guard let event = try ThreadDeskEvent(event) else { continue }
                    if case .messageCreated(let message) = event, !feed.firstDelivery(of: message.id) { continue }
                    continuation.yield(event)
                    feed.lastEventID = parser.lastEventID
                    feed.failures = 0
                }
            }
        } catch let failure as ServerSentEventParser.Failure {
            throw ThreadDeskError.invalidResponse("event stream: \(failure)")
        } catch let error as ThreadDeskError {
            throw error
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw ThreadDeskError.transport(error.localizedDescription)
        }
    }

    /// Opens the stream and reads its head; an error answer is read whole and thrown.
    private static func open(
        _ request: URLRequest, idleTimeout: Duration
    ) async throws(ThreadDeskError) -> AsyncThrowingStream<StreamChunk, any Error>.Iterator {
        let chunks = request.streamed(idleTimeout: idleTimeout)
        var iterator = chunks.makeAsyncIterator()
        do {
            guard case .head(let status, let headers) = try await iterator.next() else { throw ThreadDeskError.invalidResponse("no response") }
            guard status == 200 else {
                var body = Data()
                while body.count < 65_536, case .body(let bytes) = try await iterator.next() { body.append(bytes) }
                throw Transport.error(Transport.Reply(status: status, headers: headers, body: body))
            }
            guard headers["content-type"]?.lowercased().hasPrefix("text/event-stream") == true else {
                // A proxy or server that answers something else: treat as no stream.
                throw ThreadDeskError.server(status: 406, code: .http(status: 406), message: "not an event stream", retryAfter: nil)
            }
        } catch let error as ThreadDeskError {
            throw error
        } catch {
            throw .transport(error.localizedDescription)
        }
        // The rest of the chunks, after the head this function consumed.
        return iterator
    }

    /// Polls for new messages for `streamRetryInterval`, then lets the stream be tried again.
    private func poll(_ feed: inout LiveFeedState, _ continuation: AsyncStream<ThreadDeskEvent>.Continuation) async throws {
        continuation.yield(.connection(.polling))
        let until = ContinuousClock.now + configuration.streamRetryInterval
        var unread: Int?
        while ContinuousClock.now < until {
            try Task.checkCancellation()
            do {
                if let newest = feed.newestMessageID {
                    var more = true
                    while more {
                        let page = try await messages(after: feed.newestMessageID ?? newest, limit: 100)
                        for message in page.messages where feed.firstDelivery(of: message.id) {
                            continuation.yield(.messageCreated(message))
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
                    continuation.yield(.unread(count: count))
                }
            } catch .server(401, _, _, _) {
                throw CancellationError()
            } catch {
                // Polling is the fallback: a failed poll waits for the next.
            }
            try await Task.sleep(for: configuration.pollInterval)
        }
        feed.failures = 0
    }
}
