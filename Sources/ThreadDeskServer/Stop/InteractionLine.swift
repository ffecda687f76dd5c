import Deadlines
import DiscordREST
import Logging
import Synchronization

/// Interactions the gateway heard (slash commands, button clicks, modal submits), waiting for
/// their turn: at most `queueLimit` wait and `limit` are answered at once. Once the stop began
/// (`ShutdownDrain`) nothing more is taken in or begun (Discord tells those agents the
/// application did not respond), and those under way get what is left of the drain to finish,
/// so an agent's reply is not cut between Discord's post and ThreadDesk's record of it while
/// there is time.
final class InteractionLine: Sendable {
    private let waiting = Mutex<[DiscordInteraction]>([])
    private let answering = Mutex(0)
    /// Woken when an interaction comes or one ends; the owner's loop waits on it.
    let wakeUps: WakeSignal
    let limit: Int
    let queueLimit: Int
    /// What `BackgroundWork` counts the line's interactions as, and what the logs call them.
    let name: String
    private let stop: ShutdownDrain
    private let work: BackgroundWork
    private let logger: Logger

    init(
        _ name: String, stop: ShutdownDrain, limit: Int = 32, queueLimit: Int = 256, wakeUps: WakeSignal = WakeSignal(), work: BackgroundWork,
        logger: Logger
    ) {
        (self.name, self.stop, self.limit, self.queueLimit, self.wakeUps, self.work, self.logger) = (name, stop, limit, queueLimit, wakeUps, work, logger)
    }

    /// Queues `interaction`; false (and a warning) when `queueLimit` wait already or the stop began.
    @discardableResult
    func receive(_ interaction: DiscordInteraction) -> Bool {
        let accepted = waiting.withLock { waiting in
            guard !stop.hasBegun, waiting.count < queueLimit else { return false }
            waiting.append(interaction)
            // Counted before anyone can take it (and end it).
            work.begin(name)
            return true
        }
        if accepted {
            wakeUps.signal()
        } else {
            logger.warning("An interaction was dropped: too many wait, or the server is stopping", metadata: ["line": "\(name)"])
        }
        return accepted
    }

    /// The interactions that may begin now, counted as under way: each must end with `done()`.
    /// None once the stop began.
    func take() -> [DiscordInteraction] {
        guard !stop.hasBegun else { return [] }
        let room = limit - answering.withLock { $0 }
        let taken = waiting.withLock { waiting in
            let taken = Array(waiting.prefix(max(0, room)))
            waiting.removeFirst(taken.count)
            return taken
        }
        answering.withLock { $0 += taken.count }
        return taken
    }

    /// One interaction `take()` gave is answered (or gave up).
    func done() {
        answering.withLock { $0 -= 1 }
        work.end(name)
        wakeUps.signal()
    }

    /// The interactions under way.
    var underWay: Int { answering.withLock { $0 } }

    /// At a graceful stop: drops those not begun, then waits for those under way until the
    /// stop's drain is over. Returns early when the task is cancelled.
    func drain() async {
        stop.begin()
        let dropped = waiting.withLock { waiting in
            defer { waiting.removeAll() }
            return waiting.count
        }
        if dropped > 0 {
            work.end(name, count: dropped)
            logger.notice("Interactions not begun before the stop were dropped", metadata: ["line": "\(name)", "interactions": "\(dropped)"])
        }
        if underWay > 0 {
            logger.info("Stopping: waiting for the interactions under way", metadata: ["line": "\(name)", "interactions": "\(underWay)", "for": "\(stop.left)"])
        }
        while underWay > 0, !Task.isCancelled {
            guard stop.left > .zero else {
                logger.warning(
                    "Interactions still under way at the end of the stop's drain are cancelled", metadata: ["line": "\(name)", "interactions": "\(underWay)"])
                return
            }
            _ = await stop.wait(for: wakeUps)
        }
    }
}
