/// How ThreadDesk stops, in one place. On SIGTERM or SIGINT the process's service group
/// (`buildServiceGroup`, with the process deadline `ShutdownDeadline`: the last word, it ends a
/// process still running `SHUTDOWN_GRACE_SECONDS` + `SHUTDOWN_CANCEL_GRACE_SECONDS` after the
/// signal) tells its services of the stop one at a time, from the last started back:
///
/// 1. The public listener, then the internal one, stop accepting; the first connection to hear
///    the quiesce begins the `ShutdownDrain` (`RequestArrivalStart`): from there every part shares
///    one drain (most of `SHUTDOWN_GRACE_SECONDS`, its last second left for answers), not each its
///    own. The requests under way finish within what is left of it (`DeadlineMiddleware`).
/// 2. `ShutdownDrainStart` (stage `drainStart`) begins the drain if no connection was open.
/// 3. The agents' work (`agentWork`: the desk's slash commands and the drafts' clicks, each an
///    `InteractionLine`) takes nothing new and lets what is under way finish within the drain,
///    before the gateway that brings it stops.
/// 4. The gateway closes its session; the FAQ mirrors it fed stop.
/// 5. The features (`features`: the outbox's deliveries under way finish within the drain, the
///    webhooks' requests under way get a drain of their own within it and what is cut is sent
///    again later, the hub ends every stream, the queues end) stop in the reverse of their start.
/// 6. The outside connections (Discord's CDN, the assistant's provider, APNs), then the store's
///    pool, then the span exporter, which sends what the others' last work left.
///
/// `StopReport` logs, once the last has stopped, what each service's stop took (`StopRecord`).
///
/// The stages are the order: a service's place in `ServerRoot.services` is its stage, and within
/// a stage the order it is listed in. They start in this order and stop in its reverse.
enum StopStage: Int, Comparable, CaseIterable, Sendable {
    /// The span exporter: stops last.
    case telemetry
    /// The store's pool.
    case store
    /// The outside connections every feature uses.
    case connections
    /// The features' background work.
    case features
    /// Each app's FAQ forum mirror, before the gateway that feeds them.
    case faqMirrors
    /// Discord's gateway, in process.
    case gateway
    /// The agents' slash commands and draft clicks: told of a stop before the gateway that brings
    /// them, so their work under way gets the drain rather than what the gateway's stop leaves.
    case agentWork
    /// The first told of a stop once the listeners closed: it starts the drain's time.
    case drainStart

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `services` in start order: by stage, and within a stage as listed.
    static func ordered<Item>(_ services: [(stage: StopStage, item: Item)]) -> [Item] {
        services.enumerated().sorted { ($0.element.stage, $0.offset) < ($1.element.stage, $1.offset) }.map(\.element.item)
    }
}
