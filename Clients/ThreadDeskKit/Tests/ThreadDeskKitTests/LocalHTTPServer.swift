import Foundation
@testable import ThreadDeskKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real HTTP server on 127.0.0.1 (port 0) for a client's requests: each connection gets the next
/// canned answer and is closed; the requests are recorded. One connection at a time, on a thread of
/// its own; `stop()` ends it, and a client that stops writing is given up after `receiveTimeout`.
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
        /// `Content-Type` here replaces the default, `application/json`.
        var headers: [String: String] = [:]
        var body: String
        /// Held until the test releases it (a slow answer), while the next connections are served.
        var hold: Hold? = nil
    }

    /// An answer the test lets go: the request has arrived once `hasArrived`, and the answer
    /// goes at `release()` (or after 30 s, or at `stop()`).
    final class Hold: @unchecked Sendable {
        private let gate = DispatchSemaphore(value: 0)
        private let arrival = Locked(false)

        var hasArrived: Bool { arrival.current }
        func arrived() { arrival.withLock { $0 = true } }
        func release() { gate.signal() }
        func wait() { _ = gate.wait(timeout: .now() + 30) }
    }

    /// How long a connection may keep the thread waiting for the rest of its request (or for
    /// room to send the answer).
    static let receiveTimeout = timeval(tv_sec: 10, tv_usec: 0)

    let port: Int
    let requests = Locked<[Request]>([])
    private let socket: Int32
    private let answers: Locked<[Answer]>
    /// Whether `stop()` ran (or the thread ended), and the connection being served: shut down and
    /// closed under this lock only, so neither call can reach a descriptor already reused.
    private let state = Locked<(stopped: Bool, connection: Int32?)>((false, nil))
    /// Held answers not let go yet: `stop()` lets them go.
    private let holds = Locked<[Hold]>([])

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

    /// A send to a connection `stop()` shut down fails instead of raising SIGPIPE (Darwin: `SO_NOSIGPIPE`).
    #if canImport(Glibc)
    static let noSignal = Int32(MSG_NOSIGNAL)
    #else
    static let noSignal: Int32 = 0
    #endif

    /// Wakes the blocked `accept` or `recv` and ends the thread.
    func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            shutdown(socket, Int32(SHUT_RDWR))
            if let connection = state.connection { shutdown(connection, Int32(SHUT_RDWR)) }
        }
        for hold in holds.withLock({ $0 }) { hold.release() }
    }

    private func serve() {
        defer {
            state.withLock { state in
                state.stopped = true
                close(socket)
            }
        }
        while true {
            let connection = accept(socket, nil, nil)
            guard connection >= 0 else { return }
            var timeout = Self.receiveTimeout
            let length = socklen_t(MemoryLayout<timeval>.size)
            _ = setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, length)
            _ = setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, length)
            #if canImport(Darwin)
            var on: Int32 = 1
            _ = setsockopt(connection, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
            #endif
            let serving = state.withLock { state in
                if !state.stopped { state.connection = connection }
                return !state.stopped
            }
            defer {
                state.withLock { state in
                    state.connection = nil
                    close(connection)
                }
            }
            guard serving else { return }
            if let request = read(connection) {
                requests.withLock { $0.append(request) }
                let answer = answers.withLock { $0.isEmpty ? Answer(status: 500, body: "{}") : $0.removeFirst() }
                var head = "HTTP/1.1 \(answer.status) Answer\r\nConnection: close\r\n"
                // JSON unless the answer says otherwise (an event stream).
                if !answer.headers.keys.contains(where: { $0.lowercased() == "content-type" }) { head += "Content-Type: application/json\r\n" }
                for (name, value) in answer.headers { head += "\(name): \(value)\r\n" }
                let body = Data(answer.body.utf8)
                head += "Content-Length: \(body.count)\r\n\r\n"
                let reply = Data(head.utf8) + body
                if let hold = answer.hold {
                    // A connection of its own (the loop closes this descriptor), answered on release.
                    let held = dup(connection)
                    holds.withLock { $0.append(hold) }
                    hold.arrived()
                    Thread {
                        hold.wait()
                        _ = reply.withUnsafeBytes { send(held, $0.baseAddress, $0.count, Self.noSignal) }
                        close(held)
                    }.start()
                    continue
                }
                _ = reply.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Self.noSignal) }
            }
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
