import ThreadDeskCore
import ThreadDeskStore

/// An app's reserved share of the limits every app of a deployment draws on (the apps file's
/// `limits`): a key pulled from another app's binary spends the others' pool, never this share,
/// and this app never spends more than it (nor anything of the pool).
public struct AppLimits: Sendable, Hashable {
    /// New forum threads per hour, out of `QUOTA_THREADS_TOTAL`.
    public var threadsPerHour: Int?
    /// Open event streams per process, out of `LIVE_MAX_STREAMS`.
    public var streams: Int?

    public init(threadsPerHour: Int? = nil, streams: Int? = nil) {
        (self.threadsPerHour, self.streams) = (threadsPerHour, streams)
    }

    static let fields: Set<String> = ["threadsPerHour", "streams"]
}

extension AppCatalog {
    /// The apps that reserved new threads, and how many per hour.
    public var threadShares: [AppID: Int] { Dictionary(uniqueKeysWithValues: apps.compactMap { app in app.limits?.threadsPerHour.map { (app.id, $0) } }) }

    /// The apps that reserved open streams (per process), and how many.
    public var streamShares: [AppID: Int] { Dictionary(uniqueKeysWithValues: apps.compactMap { app in app.limits?.streams.map { (app.id, $0) } }) }

    /// What is wrong with the shares against the deployment's limits: more reserved than there is,
    /// or all of it reserved while an app without a share has nothing left.
    func shareProblems(threadsTotal: QuotaLimit, maxStreams: Int) -> [String] {
        var problems: [String] = []
        func check(_ reserved: [AppID: Int], total: Double?, field: String, variable: String) {
            guard let total, !reserved.isEmpty else { return }
            let sum = Double(reserved.values.reduce(0, +))
            let unreserved = apps.contains { reserved[$0.id] == nil }
            if sum > total || unreserved && sum >= total {
                problems.append(
                    "APPS_FILE: limits.\(field) add up to \(Int(sum)), more than \(variable) allows"
                        + (unreserved ? " while leaving some for the apps without a share" : ""))
            }
        }
        // The thread budget per hour, whatever its period (`0`: off, no total to share).
        let perHour = threadsTotal.count > 0 ? Double(threadsTotal.count) * (.seconds(3600) / threadsTotal.period) : nil
        check(threadShares, total: perHour, field: "threadsPerHour", variable: "QUOTA_THREADS_TOTAL")
        check(streamShares, total: Double(maxStreams), field: "streams", variable: "LIVE_MAX_STREAMS")
        return problems
    }
}
