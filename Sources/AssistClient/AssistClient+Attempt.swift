import AsyncHTTPClient
import Deadlines
import Foundation
import NIOCore
import NIOHTTP1
import NIOFoundationCompat
import Synchronization

/// One HTTP attempt, kept to its time by a watchdog on the client's clock.
extension AssistClient {
    /// Sends `request` and hands a 2xx answer to `read`; any other status is read as the
    /// provider's refusal. The attempt ends by `attemptTimeout` (or the call's deadline, if
    /// sooner), and a streamed body that stays quiet for `streamIdle` ends it as cut: the watchdog
    /// cancels the request, which closes its connection.
    func attempt<C: Clock<Duration>, T: Sendable>(
        _ request: HTTPClientRequest, on clock: C, until callDeadline: C.Instant,
        read: @escaping @Sendable (HTTPClientResponse, BodyProgress<C>) async -> Result<T, Problem>
    ) async -> Result<T, Problem> {
        var request = request
        if let key = configuration.apiKey { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        let sent = request
        let attemptDeadline = min(callDeadline, clock.now.advanced(by: configuration.attemptTimeout))
        let progress = BodyProgress(clock: clock)
        let (httpClient, idle, errorLimit) = (self.httpClient, configuration.streamIdle, Self.errorBodyLimit)
        // The watchdog keeps the attempt's time on `clock`; this real-time bound on the HTTP client
        // only stands in for a clock that stopped.
        let backstop = NIODeadline.now() + .nanoseconds(Int64((configuration.deadline + configuration.attemptTimeout) / .nanoseconds(1)))
        return await withTaskGroup(of: Result<T, Problem>?.self) { group in
            group.addTask {
                let response: HTTPClientResponse
                do {
                    response = try await httpClient.execute(sent, deadline: backstop)
                } catch {
                    return .failure(.later(.unreachable(Self.describe(error))))
                }
                let status = Int(response.status.code)
                guard (200..<300).contains(status) else { return .failure(await Self.refusal(response, limit: errorLimit)) }
                return await read(response, progress)
            }
            group.addTask {
                await progress.watch(until: attemptDeadline, idle: idle).map { .failure($0) }
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if let next { return next }
            }
            return .failure(.final(.unreachable("cancelled")))
        }
    }

    /// Error answers are read this far (a provider's message is a few hundred bytes).
    static var errorBodyLimit: Int { 64 << 10 }

    /// What a status that is not 2xx means: 429 (unless the quota is spent) and 500/502/503/504
    /// may pass, after the provider's `Retry-After` when it gives one; other 4xx are refusals; the
    /// rest are final.
    static func refusal(_ response: HTTPClientResponse, limit: Int) async -> Problem {
        let status = Int(response.status.code)
        let retryAfter = Self.retryAfter(
            milliseconds: response.headers.first(name: "retry-after-ms"), header: response.headers.first(name: "retry-after"), now: Date())
        // The code is worth a partial read; a body too long or cut names none.
        let body = (try? await collect(response.body, limit: limit).get()) ?? Data()
        let code = errorCode(status: status, body: body)
        switch status {
        case 429 where code == .insufficientQuota:
            return .final(.refused(status: status, code: code))
        case 429:
            return .later(.rateLimited(retryAfter: retryAfter), after: retryAfter)
        case 500, 502, 503, 504:
            return .later(.server(status: status), after: retryAfter)
        case 400..<500:
            return .final(.refused(status: status, code: code))
        default:
            return .final(.server(status: status))
        }
    }

    /// The whole body, at most `limit` bytes: larger is malformed, a cut one is a cut stream.
    static func collect(_ body: HTTPClientResponse.Body, limit: Int) async -> Result<Data, Problem> {
        var data = Data()
        do {
            for try await buffer in body {
                guard data.count + buffer.readableBytes <= limit else {
                    return .failure(.final(.malformed("the answer is larger than \(limit) bytes")))
                }
                data.append(contentsOf: buffer.readableBytesView)
            }
        } catch {
            return .failure(.later(.cutStream))
        }
        return .success(data)
    }

    /// An HTTP client's error, without anything a request carried.
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)" }
        return String(describing: type(of: error)) + ": " + String("\(error)".prefix(200))
    }
}

/// When an attempt's body last moved, and the watchdog that ends the attempt on time.
final class BodyProgress<C: Clock<Duration>>: Sendable {
    private let clock: C
    private let state: Mutex<(last: C.Instant, streaming: Bool)>
    /// Wakes the watchdog when a stream begins, so it starts counting idleness at once.
    private let began = WakeSignal()

    init(clock: C) {
        self.clock = clock
        state = Mutex((clock.now, false))
    }

    /// A stream's head arrived: from now on, quiet for `idle` is a cut.
    func streamBegan() {
        state.withLock { $0 = (clock.now, true) }
        began.signal()
    }

    /// The stream sent something.
    func moved() {
        let now = clock.now
        state.withLock { $0.last = now }
    }

    /// Sleeps until the attempt's deadline, or until a stream has been quiet for `idle`, and
    /// tells which came; nil when cancelled (the attempt ended first).
    func watch(until deadline: C.Instant, idle: Duration) async -> AssistClient.Problem? {
        let clock = self.clock
        while !Task.isCancelled {
            let (last, streaming) = state.withLock { $0 }
            let due = streaming ? min(deadline, last.advanced(by: idle)) : deadline
            let woken = await began.wait(orUntil: { try? await clock.sleep(until: due, tolerance: nil) })
            if woken || Task.isCancelled { continue }
            let now = clock.now
            if now >= deadline { return .later(.timeout) }
            let (newest, quiet) = state.withLock { ($0.last, $0.streaming) }
            if quiet, now >= newest.advanced(by: idle) { return .later(.cutStream) }
        }
        return nil
    }
}
