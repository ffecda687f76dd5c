import Foundation
@testable import ThreadDeskKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real HTTP server on 127.0.0.1 (port 0) for a client's requests: each connection gets the next
/// canned answer and is closed; the requests are recorded. One connection at a time, on a thread of
/// its own; `stop()` ends it.
final class LocalHTTPServer: Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        /// Header names lowercased.
        var headers: [String: String]
        var body: Data
    }

    struct Answer: Sendable {
        var status: Int
        var headers: [String: String] = [:]
        var body: String
    }

    let port: Int
    let requests = Locked<[Request]>([])
    private let socket: Int32
    private let answers: Locked<[Answer]>

    init(answers: [Answer]) throws {
        self.answers = Locked(answers)
        #if canImport(Glibc)
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw CocoaError(.fileReadUnknown) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 8) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw CocoaError(.fileReadUnknown)
        }
        socket = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Wakes the blocked `accept` and ends the thread.
    func stop() {
        shutdown(socket, Int32(SHUT_RDWR))
    }

    private func serve() {
        defer { close(socket) }
        while true {
            let connection = accept(socket, nil, nil)
            guard connection >= 0 else { return }
            if let request = read(connection) {
                requests.withLock { $0.append(request) }
                let answer = answers.withLock { $0.isEmpty ? Answer(status: 500, body: "{}") : $0.removeFirst() }
                var head = "HTTP/1.1 \(answer.status) Answer\r\nContent-Type: application/json\r\nConnection: close\r\n"
                for (name, value) in answer.headers { head += "\(name): \(value)\r\n" }
                let body = Data(answer.body.utf8)
                head += "Content-Length: \(body.count)\r\n\r\n"
                let reply = Data(head.utf8) + body
                _ = reply.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, 0) }
            }
            close(connection)
        }
    }

    /// One request: the head up to the blank line, then `Content-Length` bytes of body.
    private func read(_ connection: Int32) -> Request? {
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var head: (request: Request, bodyStart: Int, length: Int)?
        while true {
            if let head, received.count - head.bodyStart >= head.length {
                var request = head.request
                request.body = received.subdata(in: head.bodyStart..<head.bodyStart + head.length)
                return request
            }
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { return nil }
            received.append(contentsOf: buffer[0..<count])
            if head == nil, let end = received.range(of: Data("\r\n\r\n".utf8)) {
                let lines = String(decoding: received[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
                let first = lines[0].split(separator: " ")
                guard first.count >= 2 else { return nil }
                var headers: [String: String] = [:]
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let request = Request(method: String(first[0]), path: String(first[1]), headers: headers, body: Data())
                head = (request, end.upperBound, Int(headers["content-length"] ?? "0") ?? 0)
            }
        }
    }
}
