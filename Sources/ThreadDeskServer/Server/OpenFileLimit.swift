#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The number of files (sockets included) this process may have open: every event stream, poll
/// and Discord connection takes one. Servers start with a low soft limit (often 1,024) below a
/// higher hard one; `raiseToHard()` lifts the soft one as far as the system allows, which needs no
/// privilege. Above the hard limit only the system can go (`LimitNOFILE=` in systemd, `ulimit -Hn`
/// as root, `--ulimit nofile=` in Docker).
public struct OpenFileLimit: Sendable, Equatable {
    public var soft: Int
    public var hard: Int

    public init(soft: Int, hard: Int) {
        self.soft = soft
        self.hard = hard
    }

    /// Files kept for everything but event streams: listeners, polls and sends in flight, the
    /// store, Discord and APNs connections, logs.
    public static let reserve = 1_024

    /// The limit now; nil where the system does not say.
    public static func current() -> OpenFileLimit? {
        var limit = rlimit()
        guard getrlimit(Self.resource, &limit) == 0 else { return nil }
        return OpenFileLimit(soft: Self.count(limit.rlim_cur), hard: Self.count(limit.rlim_max))
    }

    /// Lifts the soft limit to the hard one; answers the limit in force afterwards.
    @discardableResult
    public static func raiseToHard() -> OpenFileLimit? {
        var limit = rlimit()
        guard getrlimit(Self.resource, &limit) == 0 else { return nil }
        if limit.rlim_cur != limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            // macOS refuses RLIM_INFINITY here; it keeps the old soft limit, which `current()` then reports.
            _ = setrlimit(Self.resource, &raised)
        }
        return current()
    }

    /// The event streams this limit can carry beside everything else, given the configured
    /// maximum: a stream past the limit would make the process's `accept` fail for every client,
    /// polls included, where a refused stream (503, retried) costs only that stream.
    public func streamCapacity(configured: Int) -> Int {
        min(configured, max(1, soft - Self.reserve))
    }

    private static func count(_ value: rlim_t) -> Int {
        value > rlim_t(Int.max) ? Int.max : Int(value)
    }

    #if canImport(Glibc)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif
}
