import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// A user's message marks the help center's articles they read in the 10 minutes before it as
/// read and not enough (`/stats` counts the reads that were), as the message is accepted.
struct ReadsBeforeMessages: MirrorRecorder {
    let store: any ArticleReads
    let logger: Logger
    let now: @Sendable () -> Date

    static let window: TimeInterval = 600

    func record(_ intake: MirrorIntake) async {}

    func accepted(_ message: MirroredMessage, owner: UserID, in context: inout UserContext) async {
        guard message.author == .user else { return }
        do {
            try await store.userWroteAfterReads(owner, at: now(), window: Self.window)
        } catch {
            logger.notice("Could not note the articles read before a message", metadata: ["user": "\(owner.logValue)", "error": "\(error)"])
        }
    }
}
