/// How far the mirror trusts the gateway feed, and how it checks itself against Discord.
public struct MirrorSettings: Sendable {
    /// The feed counts as live while something was heard from the gateway this recently (the
    /// gateway reports at every heartbeat, about every 41 s). Longer silence is a gap.
    public var feedStaleAfter: Duration = .seconds(90)
    /// Threads with activity this recent are refreshed from REST by the periodic reconciliation,
    /// which catches edits and deletes missed in a gap.
    public var reconcileWindow: Duration = .seconds(24 * 3600)
    /// The periodic reconciliation (gaps also start one at once).
    public var reconcileInterval: Duration = .seconds(300)
    /// Threads a periodic reconciliation checks per second while the feed is live, so the safety
    /// net never takes Discord's global budget (50 requests/s) from users: at 5, about a tenth.
    /// A reconciliation after a gap goes at full speed (the mirror is behind until it ends).
    public var reconcileThreadsPerSecond = 5

    public init() {}
}
