import Hummingbird
import Prometheus
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// Turns for the streams being opened in this process (`LiveSettings.openingAtOnce`, off unless
/// set), taken after
/// the token is checked (a made-up token never waits, nor takes a place in the queue) and held
/// until the stream's first events are read. A deploy or a network blip brings every stream back
/// at once: each opening reads the store a few times, and without turns they all raced for its
/// pool, so most waited out their deadline after doing part of their work. Now up to
/// `openingQueue` wait in arrival order, and the rest are answered 503 `busy` at once.
///
/// A user's openings under way (waiting or in a turn) count against `LiveSettings.streamsPerUser`
/// before they take a place, and their limits are charged before that (`V1Groups.streamers`): one
/// token cannot fill the queue everyone else's openings wait in.
///
/// Nothing in a turn waits on a user's lock: the token's first use is noted beside the opening
/// (`TokenUseNotes`), not in it. (An earlier gate taken before the token check held its turns
/// through that write, and at 100,000 streams over six replicas its turns convoyed behind
/// users' locks.)
struct StreamOpenings: RouterMiddleware {
    typealias Context = ThreadDeskRequestContext
    /// Nil when openings take no turns (`LiveSettings.openingAtOnce` nil).
    let turns: OpeningTurns?
    let metrics: ServerMetrics
    /// Runs first in each turn (`LiveSettings.inTurn`: tests hold a turn with it).
    private let inTurn: (@Sendable () async -> Void)?
    /// Each user's openings under way.
    private let underWay: OpeningsUnderWay

    /// - Parameter requestTimeout: The request's whole deadline: an opening waits at most half of it.
    init(settings: LiveSettings, requestTimeout: Duration, time: ServerTime, metrics: ServerMetrics) {
        let (opening, waiting) = (metrics.live.opening, metrics.live.waitingToOpen)
        let wait = min(settings.openingWait, requestTimeout / 2)
        turns = settings.openingAtOnce.map { count in
            OpeningTurns(turns: count, maxWaiting: settings.openingQueue, wait: wait, time: time) { holding, queued in
                opening.set(to: Double(holding))
                waiting.set(to: Double(queued))
            }
        }
        self.metrics = metrics
        inTurn = settings.inTurn
        underWay = OpeningsUnderWay(perUser: settings.streamsPerUser)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let turns else { return try await next(request, context) }
        let user = try context.user().id
        guard underWay.enter(user) else {
            metrics.quotaRefused("event streams opening per user")
            throw APIError(
                .tooManyRequests, .rateLimited, "Too many of your event streams are opening at once; wait for them.", retryAfterSeconds: 2)
        }
        defer { underWay.leave(user) }
        do {
            return try await turns.withTurn {
                await inTurn?()
                return try await next(request, context)
            }
        } catch let refusal as OpeningTurns.Refusal {
            metrics.openingRefused(refusal == .full ? "full" : "waited")
            throw APIError(.serviceUnavailable, .busy, "Many event streams are opening; try again shortly.", retryAfterSeconds: 2)
        }
    }
}

/// How many openings each user has under way; at most `perUser` (a user's open streams past it
/// close their oldest, but an opening has nothing to close yet).
final class OpeningsUnderWay: Sendable {
    private let counts = Mutex<[UserID: Int]>([:])
    let perUser: Int

    init(perUser: Int) { self.perUser = perUser }

    func enter(_ user: UserID) -> Bool {
        counts.withLock { counts in
            guard counts[user, default: 0] < perUser else { return false }
            counts[user, default: 0] += 1
            return true
        }
    }

    func leave(_ user: UserID) {
        counts.withLock { counts in
            let left = (counts[user] ?? 1) - 1
            counts[user] = left > 0 ? left : nil
        }
    }
}
