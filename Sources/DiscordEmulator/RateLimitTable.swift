import Foundation

/// Fixed windows per bucket key, counted the way Discord counts them: a window opens with the
/// first request after the previous one closed.
struct RateLimitTable: Sendable {
    struct Window: Sendable {
        var used: Int
        var resetAt: Duration
    }

    enum Decision: Sendable {
        case allowed(remaining: Int, resetAfter: Duration)
        case limited(retryAfter: Duration)
    }

    private var windows: [String: Window] = [:]

    mutating func take(_ key: String, limit: DiscordEmulator.WindowLimit, now: Duration) -> Decision {
        var window = windows[key] ?? Window(used: 0, resetAt: now)
        if now >= window.resetAt {
            window = Window(used: 0, resetAt: now + limit.window)
        }
        guard window.used < limit.limit else {
            return .limited(retryAfter: window.resetAt - now)
        }
        window.used += 1
        windows[key] = window
        return .allowed(remaining: limit.limit - window.used, resetAfter: window.resetAt - now)
    }

    mutating func reset() { windows.removeAll() }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
