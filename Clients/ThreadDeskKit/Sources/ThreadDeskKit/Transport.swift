import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// HTTP for the client: requests with a deadline, errors as ``ThreadDeskError``.
struct Transport: Sendable {
    let session: URLSession
    let timeout: TimeInterval

    struct Reply: Sendable {
        let status: Int
        let headers: [String: String]
        let body: Data
    }

    private struct TimedOut: Error {}

    func send(_ request: URLRequest) async throws(ThreadDeskError) -> Reply {
        var request = request
        // URLSession's own timeout is only a backstop: on Linux it does not keep sub-second
        // values, so the deadline is this task's.
        request.timeoutInterval = timeout + 5
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await withThrowingTaskGroup(of: (Data, URLResponse).self) { [session, timeout, request] group in
                group.addTask { try await Self.data(session, for: request) }
                group.addTask {
                    try await Time.sleep(timeout)
                    throw TimedOut()
                }
                defer { group.cancelAll() }
                guard let first = try await group.next() else { throw CancellationError() }
                return first
            }
        } catch is TimedOut {
            throw .transport("no answer within \(timeout) s")
        } catch is CancellationError {
            throw .transport("cancelled")
        } catch {
            throw .transport(error.localizedDescription)
        }
        guard let http = response as? HTTPURLResponse else { throw .invalidResponse("not HTTP") }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        let reply = Reply(status: http.statusCode, headers: headers, body: data)
        guard (200..<300).contains(reply.status) else { throw Self.error(reply) }
        return reply
    }

    #if canImport(FoundationNetworking)
    /// `session.data(for:)` without its deadlock on Linux (swift-corelibs-foundation#5412): its
    /// cancellation handler cancels the `URLSessionTask` while holding the Swift task's status lock,
    /// and takes URLSession's work queue; a response finishing at that moment holds the work queue
    /// and resumes the Swift task, which takes the status lock. A search the user typed past
    /// (latest wins) is cancelled just so, and a test process hung. Here the cancel runs on another
    /// thread, after the handler returned.
    private static func data(_ session: URLSession, for request: URLRequest) async throws -> (Data, URLResponse) {
        let handle = CancellableTask()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let data, let response {
                        continuation.resume(returning: (data, response))
                    } else {
                        continuation.resume(throwing: URLError(.badServerResponse))
                    }
                }
                handle.set(task)
                task.resume()
            }
        } onCancel: {
            handle.cancel()
        }
    }

    /// A data task to cancel from a cancellation handler: on a queue of its own, never in the
    /// handler; a cancel asked for before the task is known is carried out when it is.
    private final class CancellableTask: @unchecked Sendable {
        private let lock = NSLock()
        private var task: URLSessionTask?
        private var cancelled = false

        func set(_ task: URLSessionTask) {
            lock.lock()
            self.task = task
            let cancel = cancelled
            lock.unlock()
            if cancel { Self.cancelLater(task) }
        }

        func cancel() {
            lock.lock()
            cancelled = true
            let task = self.task
            lock.unlock()
            if let task { Self.cancelLater(task) }
        }

        private static func cancelLater(_ task: URLSessionTask) {
            DispatchQueue.global().async { task.cancel() }
        }
    }
    #else
    private static func data(_ session: URLSession, for request: URLRequest) async throws -> (Data, URLResponse) {
        try await session.data(for: request)
    }
    #endif

    static func error(_ reply: Reply) -> ThreadDeskError {
        let retryAfter = reply.headers["retry-after"].flatMap(Int.init).map { TimeInterval(max(0, min($0, 3600))) }
        if let body = try? JSONDecoder().decode(ErrorBody.self, from: reply.body) {
            return .server(status: reply.status, code: body.error.code, message: body.error.message, retryAfter: retryAfter)
        }
        return .server(
            status: reply.status, code: .http(status: reply.status), message: "HTTP \(reply.status) without an error body",
            retryAfter: retryAfter)
    }
}


/// A `multipart/form-data` body: the text, then each file.
struct MultipartForm {
    let boundary = "ThreadDeskKit-\(UUID().uuidString)"

    var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    func body(text: String, files: [OutgoingFile]) -> Data {
        var body = Data()
        func line(_ text: String) { body.append(Data((text + "\r\n").utf8)) }
        if !text.isEmpty {
            line("--\(boundary)")
            line("Content-Disposition: form-data; name=\"\(MessageForm.content)\"")
            line("Content-Type: text/plain; charset=utf-8")
            line("")
            body.append(Data(text.utf8))
            line("")
        }
        for file in files {
            line("--\(boundary)")
            line("Content-Disposition: form-data; name=\"\(MessageForm.file)\"; filename=\"\(Self.quoted(file.filename))\"")
            line("Content-Type: \(Self.headerSafe(file.contentType))")
            line("")
            body.append(file.data)
            line("")
        }
        line("--\(boundary)--")
        return body
    }

    /// A file name inside a quoted header parameter: no quotes, backslashes or line breaks.
    static func quoted(_ name: String) -> String {
        String(name.unicodeScalars.map { ["\"", "\\", "\r", "\n"].contains($0) ? "_" : Character($0) })
    }

    static func headerSafe(_ value: String) -> String {
        String(value.unicodeScalars.filter { $0.isASCII && $0.value >= 0x20 && $0 != "\u{7f}" }.map(Character.init))
    }
}
