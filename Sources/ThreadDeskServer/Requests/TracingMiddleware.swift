import HTTPTypes
import Hummingbird
import ThreadDeskTracing

/// A span for each request (tracing on): a child of the caller's W3C `traceparent` when it sends
/// one (the gateway daemon does; an app's request may), named by the matched route's template,
/// never the raw path. Tracing off: the request goes straight on.
struct TracingMiddleware: RouterMiddleware {
    typealias Context = ThreadDeskRequestContext
    let traces: Traces

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard traces.isOn else { return try await next(request, context) }
        let parent = request.headers[values: .traceparent].first.flatMap { traces.context(traceparent: $0) }
        return try await traces.span("\(request.method)", kind: .server, parent: parent, attributes: ["http.request.method": "\(request.method)"]) { span in
            let response = try await next(request, context)
            let route = context.endpointPath ?? "unmatched"
            span.rename("\(request.method) \(route)")
            span.set(["http.route": .string(route), "http.response.status_code": .int64(Int64(response.status.code))])
            if response.status.code >= 500 { span.failed() }
            return response
        }
    }
}
