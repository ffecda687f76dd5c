import Foundation
import ThreadDeskSettings

/// The conversations' lifecycle (`REMIND_AFTER_MINUTES`, `AUTO_CLOSE_DAYS`, `AUTO_CLOSE_MESSAGE`,
/// `RATINGS`): reminders and auto-close are off unless set; a closed conversation an agent
/// answered asks for a rating unless `RATINGS=off`.
public struct LifecycleSettings: Sendable, Hashable {
    /// A wait for support this long, counted in the app's support hours, gets one reminder.
    public var remindAfter: Duration?
    /// A conversation support answered last and the user left alone this long is closed.
    public var autoCloseAfter: Duration?
    /// Said to the user (as support, silently) when a conversation is closed automatically.
    public var autoCloseMessage: String?
    /// Whether closed conversations an agent answered ask the user for a rating.
    public var ratings = true

    public init() {}

    /// The longest a `/close in:` may wait.
    static let longestScheduledClose: Duration = .seconds(30 * 86_400)

    mutating func read(_ value: (String) -> String?, problem: inout ConfigurationProblem) {
        if let text = value("REMIND_AFTER_MINUTES"), !text.isEmpty, text != "off" {
            if let minutes = Int(text), (1...43_200).contains(minutes) {
                remindAfter = .seconds(minutes * 60)
            } else {
                problem.invalid.append("REMIND_AFTER_MINUTES (1 to 43200 minutes of support hours, or off)")
            }
        }
        if let text = value("AUTO_CLOSE_DAYS"), !text.isEmpty, text != "off" {
            if let days = Double(text), days.isFinite, (0.01...365).contains(days) {
                autoCloseAfter = .seconds(days * 86_400)
            } else {
                problem.invalid.append("AUTO_CLOSE_DAYS (0.01 to 365 days, or off)")
            }
        }
        if let message = value("AUTO_CLOSE_MESSAGE"), !message.isEmpty {
            if message.utf16.count <= 1_900, !message.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\n" }) {
                autoCloseMessage = message
            } else {
                problem.invalid.append("AUTO_CLOSE_MESSAGE (at most 1900 characters, no control characters but line breaks)")
            }
        }
        if let text = value("RATINGS") {
            switch text.lowercased() {
            case "on", "true", "1", "": ratings = true
            case "off", "false", "0": ratings = false
            default: problem.invalid.append("RATINGS (on or off)")
            }
        }
    }
}
