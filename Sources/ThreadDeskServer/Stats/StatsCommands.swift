import DiscordREST
import Foundation
import ThreadDeskCore

/// `/stats [days]`: support's numbers for the app of the thread it is used in, only to the agent.
struct StatsCommands: DeskCommandBook {
    let numbers: SupportNumbers

    static let name = "stats"

    var definitions: [DiscordApplicationCommand] { Self.commands }

    static var commands: [DiscordApplicationCommand] {
        [
            DiscordApplicationCommand(
                name: Self.name, description: "Support's numbers for this app: conversations, waits, first responses, ratings",
                options: [DiscordCommandOption(.integer, name: "days", description: "How many days back (1 to 366; 30)")])
        ]
    }

    func answer(_ data: DiscordInteraction.CommandData, in thread: Snowflake, owner: UserID, app: AppSettings) async throws -> String {
        let days = Desk.text("days", in: data.options ?? []).flatMap(Int.init).map { min(max($0, 1), SupportStats.longestWindow) } ?? 30
        return Self.text(try await numbers.stats(of: app, days: days))
    }

    /// The numbers in a few lines of Discord markdown (well within 2,000 characters).
    static func text(_ stats: SupportStats) -> String {
        let hours = stats.supportHours ? " (support hours)" : ""
        var lines = ["📊 **Support, last \(stats.days) day\(stats.days == 1 ? "" : "s")**"]
        let conversations = stats.conversations
        lines.append("Conversations: \(conversations.opened) opened, \(conversations.answered) answered, \(conversations.closed) closed")
        var waiting = "Waiting now: \(conversations.waitingNow)"
        if let longest = conversations.longestWaitSeconds { waiting += " (longest \(duration(longest)))" }
        lines.append(waiting)
        lines.append("First response\(hours): " + durations(stats.firstResponse))
        lines.append("Time to close: " + durations(stats.timeToClose))
        if let average = stats.ratings.average, let good = stats.ratings.goodShare {
            lines.append(String(format: "Ratings: %.1f/5 average, %.0f%% 4–5, %d rating%@", average, good * 100, stats.ratings.count, stats.ratings.count == 1 ? "" : "s"))
        } else {
            lines.append("Ratings: none yet")
        }
        lines.append("Reminders sent: \(stats.reminders)")
        if !stats.mostReadArticles.isEmpty {
            lines.append("Most read articles (reads, of them without a message within 10 min):")
            for article in stats.mostReadArticles {
                let title = article.title.map { DiscordMarkdown.escaped(MessageText.clip($0, limit: 80)) } ?? "a deleted article (\(article.id))"
                lines.append("• \(title): \(article.reads), \(article.withoutMessage) without")
            }
        }
        return lines.joined(separator: "\n")
    }

    static func durations(_ values: SupportStats.Durations) -> String {
        guard let median = values.medianSeconds, let p90 = values.p90Seconds else { return "none yet" }
        return "median \(duration(median)), p90 \(duration(p90)) (\(values.count))"
    }

    /// `45 s`, `12 min`, `3 h 5 min`, `2 d 4 h`.
    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        if total < 60 { return "\(total) s" }
        let minutes = total / 60
        if minutes < 60 { return "\(minutes) min" }
        let hours = minutes / 60
        if hours < 24 { return minutes % 60 == 0 ? "\(hours) h" : "\(hours) h \(minutes % 60) min" }
        return hours % 24 == 0 ? "\(hours / 24) d" : "\(hours / 24) d \(hours % 24) h"
    }
}
