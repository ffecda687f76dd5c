import Deadlines
import DiscordREST
import HTTPTypes
import Hummingbird
import Logging
import ThreadDeskStore
import ThreadDeskWire

/// Turns every failure into the API's JSON error shape and counts every answer by route.
/// Errors we did not anticipate are logged and answered 500 without their details.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = ThreadDeskRequestContext
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let route = context.endpointPath ?? "unmatched"
        do {
            let response = try await next(request, context)
            metrics.request(route: route, method: request.method.rawValue, status: Int(response.status.code))
            return response
        } catch {
            let apiError = Self.apiError(for: error)
            if let timedOut = error as? DeadlineExceeded {
                context.logger.warning("Request timed out", metadata: ["waiting": "\(timedOut.what)", "after": "\(timedOut.after)"])
            }
            if apiError.status.code >= 500 && apiError.status != .serviceUnavailable {
                context.logger.error("Request failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            metrics.request(route: route, method: request.method.rawValue, status: Int(apiError.status.code))
            if apiError.status == .serviceUnavailable { metrics.unavailable(route: route, code: apiError.code.rawValue) }
            return try apiError.response(from: request, context: context)
        }
    }

    static func apiError(for error: any Error) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let failure as SupportFailure:
            return APIError(failure)
        case let failure as DeviceCheckFailure:
            return APIError(failure)
        case let error as DiscordError:
            return APIError(error)
        case is DeadlineExceeded:
            return APIError(.serviceUnavailable, .timeout, "The request took too long; try again shortly.", retryAfterSeconds: 2)
        case is RequestArrivedLate:
            return APIError(.requestTimeout, .timeout, "The request did not arrive in time.")
        case is CancellationError:
            return APIError(.serviceUnavailable, .shuttingDown, "The server is restarting; try again shortly.", retryAfterSeconds: 2)
        case is OutboxIDTaken:
            // Another replica took the same message id three times running: nothing was kept.
            return APIError(.serviceUnavailable, .busy, "The server is busy; try again shortly.", retryAfterSeconds: 1)
        case is StoreUnavailableError:
            return APIError(.serviceUnavailable, .storeUnavailable, "Storage is briefly unavailable; try again shortly.", retryAfterSeconds: 2)
        case let error as HTTPError:
            switch error.status {
            case .notFound: return .notFound
            case .methodNotAllowed: return APIError(.methodNotAllowed, .methodNotAllowed, "This route does not take that method.")
            case .contentTooLarge: return APIError(.contentTooLarge, .bodyTooLarge, "The request body is too large.")
            default:
                return APIError(error.status, .http(status: error.status.code), error.body ?? error.status.reasonPhrase)
            }
        default:
            return APIError(.internalServerError, .internalError, "Something went wrong on our side.")
        }
    }
}
