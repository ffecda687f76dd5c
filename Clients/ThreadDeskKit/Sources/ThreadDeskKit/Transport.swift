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
                group.addTask { try await session.data(for: request) }
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
