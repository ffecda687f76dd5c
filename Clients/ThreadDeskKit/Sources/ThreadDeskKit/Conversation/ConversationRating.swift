import Foundation
import Observation

/// The rating support asks for once it closed a conversation it answered: the request that waits
/// (from the stream or a page), and the user's rating of it, sent under one idempotency key.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
final class ConversationRating {
    /// The closed conversation that waits for the user's rating; nil when none does.
    private(set) var request: RatingRequest?
    /// A rating is on its way to the server.
    private(set) var isSending = false
    /// The request's key: every attempt to rate it goes under it, so one whose answer was lost is
    /// the first rating again when retried, never a second.
    @ObservationIgnored private var key: String?
    /// Conversations rated (here, or found rated): a page asked for before the rating went out
    /// does not bring its request back.
    @ObservationIgnored private var rated: Set<String> = []
    /// Requests the stream brought so far: a page asked for before the latest of them says
    /// nothing about it.
    @ObservationIgnored private(set) var announced = 0
    @ObservationIgnored private var sending: Task<Result<Void, ThreadDeskError>, Never>?
    /// Whose requests these are: a rating of the user before that ends after a user change
    /// changes nothing here.
    @ObservationIgnored private var generation = 0

    private let client: ThreadDeskClient

    init(client: ThreadDeskClient) {
        self.client = client
    }

    /// `rating.requested` came on the stream.
    func requested(_ request: RatingRequest) {
        announced += 1
        show(request)
    }

    /// A page's `ratingRequest` (what waits now), the page asked for when `announced` was `mark`.
    func page(_ request: RatingRequest?, askedAt mark: Int) {
        if let request {
            show(request)
        } else if mark == announced, self.request != nil {
            // Nothing waits any more (rated on another device): unless the stream announced one
            // after this page was asked for.
            self.request = nil
            key = nil
        }
    }

    private func show(_ request: RatingRequest) {
        guard !rated.contains(request.conversationId), request != self.request else { return }
        if request.conversationId != self.request?.conversationId { key = nil }
        self.request = request
    }

    /// Rates the request that waits: checked here first (nothing is sent for a score or comment
    /// the server refuses), then sent under the request's key. Done (the request cleared) once the
    /// server has it, or says it was rated already. A second call while one is on its way waits
    /// for it: the server gets one rating.
    func rate(score: Int, comment: String?) async throws(ThreadDeskError) {
        let submission = try RatingSubmission(score: score, comment: comment).checked()
        if let sending { return try await sending.value.get() }
        guard let request else { throw .invalidInput(.ratingNotRequested, "no conversation waits for a rating") }
        let key = self.key ?? UUID().uuidString
        self.key = key
        isSending = true
        let generation = generation
        let task = Task { () -> Result<Void, ThreadDeskError> in
            let result: Result<Void, ThreadDeskError>
            do throws(ThreadDeskError) {
                try await self.client.rate(submission, idempotencyKey: key)
                result = .success(())
            } catch where Self.isDone(error) {
                result = .success(())
            } catch {
                result = .failure(error)
            }
            guard self.generation == generation else { return result }
            // Rated, or nothing waits for a rating: the request is over either way.
            if case .success = result { self.finished(request.conversationId) }
            if case .failure(let error) = result, error.code == .ratingNotRequested { self.finished(request.conversationId) }
            self.sending = nil
            self.isSending = false
            return result
        }
        sending = task
        try await task.value.get()
    }

    /// The server has a rating of the conversation: this one, one whose answer was lost and that
    /// went again with another body, or one from the user's other device.
    private static func isDone(_ error: ThreadDeskError) -> Bool {
        error.kind == .server && (error.code == .alreadyRated || error.code == .idempotencyKeyReused)
    }

    private func finished(_ conversationID: String) {
        rated.insert(conversationID)
        guard request?.conversationId == conversationID else { return }
        request = nil
        key = nil
    }

    /// The user changed: nothing of the one before stays (a rating on its way still ends, for them).
    func forget() {
        generation += 1
        request = nil
        key = nil
        rated = []
        sending = nil
        isSending = false
    }
}
