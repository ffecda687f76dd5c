import Deadlines
import Hummingbird

/// Gives every request one deadline that all of its waits honour (the per-user lock, Discord,
/// APNs, the database), and names the request to the wait tracker when one is on.
struct DeadlineMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let timeout: Duration
    let waits: WaitTracker?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await WaitTracker.$current.withValue(waits) {
            try await WaitTracker.run(job: "\(request.method) \(request.uri.path)") {
                try await Deadline.within(timeout) { try await next(request, context) }
            }
        }
    }
}
