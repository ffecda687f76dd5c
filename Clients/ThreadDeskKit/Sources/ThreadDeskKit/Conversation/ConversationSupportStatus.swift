import Foundation
import Observation

/// Whether support is in, asked again when the away time it names is over (hours, or `/away`
/// ending).
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
final class ConversationSupportStatus {
    /// Nil until known.
    private(set) var current: SupportStatus?
    @ObservationIgnored private var refresh: Task<Void, Never>?

    private let client: ThreadDeskClient
    private let sleep: @Sendable (Duration) async throws -> Void

    init(client: ThreadDeskClient, sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.client = client
        self.sleep = sleep
    }

    /// The status the server gave; when it says away until a moment, asked again then.
    func update(_ status: SupportStatus) {
        if current != status { current = status }
        refresh?.cancel()
        refresh = nil
        guard status.status == .away, let opening = status.nextOpening.flatMap(Timestamp.date) else { return }
        // At least 30 s: a server whose clock runs behind still says away for a moment after.
        let left = max(30, opening.timeIntervalSinceNow)
        refresh = Task {
            do { try await self.sleep(.milliseconds(Int64(min(left, 86_400) * 1000))) } catch { return }
            guard let status = try? await self.client.supportStatus(), !Task.isCancelled else { return }
            self.update(status)
        }
    }

    /// The user changed: not known for the new one yet.
    func forget() {
        current = nil
    }

    /// The conversation is stopping: no asking again.
    func cancel() {
        refresh?.cancel()
    }
}
