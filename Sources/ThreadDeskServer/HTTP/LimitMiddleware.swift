import Hummingbird
import ThreadDeskWire

/// Charges the route's limits before its handler runs (429 with `Retry-After` when one is spent):
/// `cost` names them for the caller, nil for none.
struct LimitMiddleware: RouterMiddleware {
    let quotas: Quotas
    let cost: @Sendable (ThreadDeskRequestContext) throws -> Quotas.Cost?

    func handle(
        _ request: Request, context: ThreadDeskRequestContext, next: (Request, ThreadDeskRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let cost = try cost(context) else { return try await next(request, context) }
        let address = quotas.clientAddress(request, context)
        try await quotas.charge(cost, address: address)
        do {
            return try await next(request, context)
        } catch let error as APIError where error.code == .busy || error.code == .uploadInProgress {
            // Turned away because the server is busy (every large-upload slot taken, or the one
            // its user or network may hold): the retry
            // the answer asks for must not find the quota spent by this attempt. A refund that
            // fails leaves it spent, as it was before refunds.
            try? await quotas.refund(cost, address: address)
            throw error
        }
    }
}
