import Foundation
import Observation

/// Typing, both ways: support's "typing…", held until the server's moment passes or support's
/// message comes; and the user's, reported to support at most once per `typingInterval`.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
final class ConversationTyping {
    private(set) var isSupportTyping = false
    @ObservationIgnored private var expiry: Task<Void, Never>?
    @ObservationIgnored private var lastReport: Duration?

    private let client: ThreadDeskClient
    private let interval: Duration
    private let sleep: @Sendable (Duration) async throws -> Void
    private let elapsed: @Sendable () -> Duration
    private let work: ConversationWork

    init(
        client: ThreadDeskClient, interval: Duration, sleep: @escaping @Sendable (Duration) async throws -> Void,
        elapsed: @escaping @Sendable () -> Duration, work: ConversationWork
    ) {
        self.client = client
        self.interval = interval
        self.sleep = sleep
        self.elapsed = elapsed
        self.work = work
    }

    /// Support is typing until `until` (the server's clock).
    func supportTyping(until: Date) {
        expiry?.cancel()
        // A device clock far behind the server's would keep it on for long: 15 s at most.
        let left = min(15, until.timeIntervalSinceNow)
        guard left > 0 else { return supportSpoke() }
        if !isSupportTyping { isSupportTyping = true }
        expiry = Task {
            do { try await self.sleep(.milliseconds(Int64((left * 1000).rounded(.up)))) } catch { return }
            self.expiry = nil
            self.isSupportTyping = false
        }
    }

    /// Support's message came: its typing is over.
    func supportSpoke() {
        expiry?.cancel()
        expiry = nil
        if isSupportTyping { isSupportTyping = false }
    }

    /// The user wrote in the draft: support is told, unless it was told within `interval`.
    func userTyped() {
        let now = elapsed()
        if lastReport.map({ now - $0 >= interval }) ?? true {
            lastReport = now
            work.start { await self.client.typing() }
        }
    }

    /// The conversation is stopping: support's typing is not waited out.
    func cancelExpiry() {
        expiry?.cancel()
    }

    /// The conversation stopped: nobody is shown typing.
    func stopped() {
        if isSupportTyping { isSupportTyping = false }
    }
}
