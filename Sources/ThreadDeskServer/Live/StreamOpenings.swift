import Deadlines
import Hummingbird
import Prometheus
import ThreadDeskStore
import ThreadDeskWire

/// Turns for the streams being opened in this process (`LiveSettings.openingAtOnce`), taken before
/// the token is checked and held until the stream's first events are read. A deploy or a network
/// blip brings every stream back at once: each opening reads the store a few times, and without
/// turns they all raced for its pool, so most waited out their deadline after doing part of
/// their work, answered 503 and tried again. Now the rest wait in arrival order without touching
/// the store, and one that waits past `openingWait` is answered 503 `busy` before any work.
struct StreamOpenings: RouterMiddleware {
    typealias Context = ThreadDeskRequestContext
    let turns: KeyedFIFOLock<Int>
    let metrics: ServerMetrics

    /// - Parameter requestTimeout: The request's whole deadline: an opening waits at most half of it.
    init(settings: LiveSettings, requestTimeout: Duration, metrics: ServerMetrics) {
        turns = KeyedFIFOLock(
            defaultTimeout: min(settings.openingWait, requestTimeout / 2), holders: settings.openingAtOnce, name: { _ in "a stream opening's turn" })
        self.metrics = metrics
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var turnTaken = false
        do {
            return try await turns.withLock(0) {
                turnTaken = true
                metrics.liveStreamsOpening.increment()
                defer { metrics.liveStreamsOpening.decrement() }
                return try await next(request, context)
            }
        } catch is DeadlineExceeded where !turnTaken {
            throw APIError(.serviceUnavailable, .busy, "Many event streams are opening; try again shortly.", retryAfterSeconds: 2)
        }
    }
}
