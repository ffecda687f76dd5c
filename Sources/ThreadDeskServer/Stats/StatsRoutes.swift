import Hummingbird
import ThreadDeskCore
import ThreadDeskWire

/// `GET /internal/stats?app=&days=`: support's numbers as JSON, for the operator's dashboards:
/// on the internal listener (behind `METRICS_TOKEN` when it is set), or on the public one only
/// with `METRICS_TOKEN`.
struct StatsRoutes: Sendable {
    let numbers: SupportNumbers
    let catalog: AppCatalog

    func register(on router: Router<ThreadDeskRequestContext>, token: String?) {
        let group = router.group()
        if let token {
            group.add(
                middleware: SecretAuthentication(
                    secret: token, presented: { $0.bearerToken },
                    refusal: APIError(.unauthorized, .unauthorized, "/internal/stats needs METRICS_TOKEN as a bearer token.")
                ) { _ in .scraper })
        }
        group.get("internal/stats") { request, _ in
            let named = request.uri.queryParameters.get("app")
            guard let app = named.map({ AppID($0) }) ?? (catalog.apps.count == 1 ? catalog.apps[0].id : nil),
                let settings = catalog.apps.first(where: { $0.id == app })
            else {
                throw APIError.badRequest(.invalidQuery, "Name the app (?app=), one of the deployment's apps.")
            }
            var days = 30
            if let text = request.uri.queryParameters.get("days") {
                guard let number = Int(text), (1...SupportStats.longestWindow).contains(number) else {
                    throw APIError.badRequest(.invalidQuery, "days must be a whole number from 1 to \(SupportStats.longestWindow).")
                }
                days = number
            }
            return try jsonResponse(try await numbers.stats(of: settings, days: days))
        }
    }
}
