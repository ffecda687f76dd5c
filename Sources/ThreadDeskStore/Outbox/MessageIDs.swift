import DiscordREST
import Foundation
import Synchronization

/// Ids for the messages ThreadDesk accepts before Discord has them, in Discord's layout: the
/// milliseconds since Discord's epoch above 22 low bits (`Snowflake(at:)`), so an accepted message
/// sorts among Discord's own messages by when it was accepted. The low bits are this process's 10
/// worker bits (random unless given) and a 12-bit count: two processes make the same id only when
/// they drew the same worker bits and accept in the same millisecond, and the store refuses the
/// second (`OutboxIDTaken`) rather than lose a message. One process's ids only grow (a clock set
/// back waits for nothing: the count goes on).
public final class MessageIDs: Sendable {
    private let worker: UInt64
    private let last = Mutex<UInt64>(0)

    /// - Parameter worker: 10 bits telling this process's ids from another's; random by default.
    public init(worker: UInt64 = UInt64.random(in: 0..<1024)) {
        self.worker = worker & 0x3FF
    }

    /// The next id, for a message accepted at `date`.
    public func next(at date: Date) -> Snowflake {
        let stamp = Snowflake(at: date).rawValue
        return last.withLock { last in
            var id = stamp | worker << 12
            if id <= last {
                // The same millisecond (or a clock set back): the count goes on, into the next
                // millisecond once its 4,096 are spent.
                id = last & 0xFFF == 0xFFF ? ((last >> 22) + 1) << 22 | worker << 12 : last + 1
            }
            last = id
            return Snowflake(id)
        }
    }
}
