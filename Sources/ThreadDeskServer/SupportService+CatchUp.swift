import Deadlines
import DiscordGateway
import DiscordREST
import Foundation
import Logging
import Prometheus
import ThreadDeskCore
import ThreadDeskStore

extension SupportService {
    /// Replies the gateway may have missed: every active forum thread whose last message is
    /// newer than what was handled (less a margin), paged through REST and run through the same
    /// handler, which pushes each reply at most once.
    ///
    /// The run happens in `CatchUpService`; this asks for one that starts after the call and
    /// waits for it to finish, within the caller's deadline.
    public func catchUp(reason: String) async {
        let gate = catchUps
        let target = gate.request(reason)
        do {
            try await withTimeout(Deadline.capping(push.catchUpWait), "the catch-up") { try await gate.wait(for: target) }
        } catch {
            logger.notice("Stopped waiting for a catch-up; it goes on", metadata: ["reason": "\(reason)", "error": "\(error)"])
        }
    }

    func runCatchUp(reason: String) async {
        defer { metrics.catchUps.increment() }
        do {
            let mark = try await store.globalValue(Self.handledUpToKey)
            let since = Self.snowflake(before: mark, margin: .seconds(120))
            let active = try await discord.activeThreads(guildID: configuration.guildID).threads
            let candidates = active.filter {
                $0.parentId == configuration.forumChannelID && ($0.lastMessageId.map { since.snowflakeLess($0) } ?? false)
            }
            var handled = 0
            var newest: String?
            for thread in candidates where try await store.userID(forThread: thread.id) != nil {
                var cursor = since
                while true {
                    let page = try await discord.messages(in: thread.id, after: cursor, limit: 100).sorted { $0.id.snowflakeLess($1.id) }
                    for message in page {
                        try await handleMessage(message)
                        handled += 1
                        if newest.map({ $0.snowflakeLess(message.id) }) ?? true { newest = message.id }
                    }
                    guard page.count == 100, let last = page.last else { break }
                    cursor = last.id
                }
            }
            if let newest, mark.map({ $0.snowflakeLess(newest) }) ?? true {
                try await store.setGlobalValue(Self.handledUpToKey, to: newest)
            }
            logger.info("Catch-up done", metadata: ["reason": "\(reason)", "threads": "\(candidates.count)", "messages": "\(handled)"])
        } catch {
            metrics.catchUpFailures.increment()
            logger.warning("Catch-up failed; the next one retries", metadata: ["reason": "\(reason)", "error": "\(error)"])
        }
    }

    /// A snowflake for `margin` before `mark` (or before now when nothing was handled yet).
    static func snowflake(before mark: String?, margin: Duration) -> String {
        let discordEpoch: UInt64 = 1_420_070_400_000
        let marginMilliseconds = UInt64(margin.components.seconds) * 1000
        let markMilliseconds = mark.flatMap(UInt64.init).map { ($0 >> 22) + discordEpoch }
            ?? UInt64(Date().timeIntervalSince1970 * 1000)
        let milliseconds = max(markMilliseconds, discordEpoch + marginMilliseconds) - marginMilliseconds
        return String((milliseconds - discordEpoch) << 22)
    }
}
