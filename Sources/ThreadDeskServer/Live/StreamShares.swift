import ThreadDeskCore

/// The open streams of a process by app, against each app's reserved share (`AppLimits.streams`):
/// an app with a share opens at most that many, the others share what is left of `maxStreams`, so
/// one app's flood of streams never refuses another app's users.
struct StreamShares: Sendable {
    private let shares: [AppID: Int]
    /// What no app reserved: the apps without a share draw on it together.
    private let pool: Int
    private var open: [AppID: Int] = [:]
    private var openInPool = 0

    init(shares: [AppID: Int], maxStreams: Int) {
        self.shares = shares
        pool = maxStreams - shares.values.reduce(0, +)
    }

    /// Whether a stream of `app` may open now.
    func admits(_ app: AppID) -> Bool {
        if let share = shares[app] { return open[app, default: 0] < share }
        return openInPool < pool
    }

    mutating func opened(_ app: AppID) {
        if shares[app] != nil { open[app, default: 0] += 1 } else { openInPool += 1 }
    }

    mutating func closed(_ app: AppID) {
        if shares[app] != nil { open[app, default: 0] -= 1 } else { openInPool -= 1 }
    }
}
