import Foundation
import Observation

/// The work a conversation's parts start in the background (a send, an edit, a sync once the
/// stream is back), cancelled together when the conversation stops or its user changes; and the
/// last failure of something the user did, which the screen shows.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
final class ConversationWork {
    /// What ``SupportConversation/lastError`` shows.
    var lastError: ThreadDeskError?
    @ObservationIgnored private var tasks: [UUID: Task<Void, Never>] = [:]

    /// Runs `operation` in a task of its own, on the main actor, until it ends or is cancelled.
    func start(_ operation: @escaping @MainActor () async -> Void) {
        let id = UUID()
        tasks[id] = Task {
            await operation()
            self.tasks[id] = nil
        }
    }

    /// The tasks under way (a test awaits them).
    var running: [Task<Void, Never>] { Array(tasks.values) }

    /// Cancels every task under way, and returns them: a task ends by itself once cancelled, so
    /// the caller may wait for them.
    @discardableResult
    func cancelAll() -> [Task<Void, Never>] {
        let pending = Array(tasks.values)
        for task in pending { task.cancel() }
        return pending
    }
}
