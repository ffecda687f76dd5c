import Hummingbird
import Logging

/// One line per request, after its answer: method, the matched route's template (never the raw
/// path: the legacy routes carry the user id, their only credential, in it), status and time.
struct AccessLogMiddleware: RouterMiddleware {
    typealias Context = ThreadDeskRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let response = try await next(request, context)
        let milliseconds = Int(started.duration(to: .now) / .milliseconds(1))
        context.logger.info(
            "Request",
            metadata: [
                "method": "\(request.method)", "route": "\(context.endpointPath ?? "unmatched")",
                "status": "\(response.status.code)", "ms": "\(milliseconds)",
            ])
        return response
    }
}
