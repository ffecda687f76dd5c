import Foundation
import Observation

/// Curated answers for the draft, asked for once the user pauses, and the one a message names to
/// support: the one the user opened, or else the one shown first.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
final class ConversationSuggestions {
    /// Best first.
    private(set) var suggestions: [Suggestion] = []
    @ObservationIgnored private var openedID: String?
    /// The draft the suggestions under way are for.
    @ObservationIgnored private var asked: String?
    @ObservationIgnored private var task: Task<Void, Never>?

    private let client: ThreadDeskClient
    private let delay: Duration
    private let sleep: @Sendable (Duration) async throws -> Void

    init(client: ThreadDeskClient, delay: Duration, sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.client = client
        self.delay = delay
        self.sleep = sleep
    }

    /// The help center's article the user read before asking (``SupportConversation/stillNeedHelp(article:)``):
    /// named by the next text message, whatever happens to the draft until then.
    @ObservationIgnored private var articleID: String?

    /// The answer the next message names: the article the user came from, the suggestion they
    /// opened, or else the one shown first.
    var named: String? { articleID ?? openedID ?? suggestions.first?.id }

    /// The user came from the help center's `article`.
    func cameFrom(_ article: Article) {
        articleID = article.id
    }

    /// A text message went out naming ``named``: the article is told once.
    func sent() {
        articleID = nil
    }

    /// The user opened `suggestion`.
    func opened(_ suggestion: Suggestion) {
        openedID = suggestion.id
    }

    /// Suggestions for `draft` once the user has paused for `delay`, replacing the ask before.
    func ask(for draft: String) {
        task?.cancel()
        asked = draft
        task = Task {
            do { try await self.sleep(self.delay) } catch { return }
            guard let found = try? await self.client.suggestions(for: draft), !Task.isCancelled, self.asked == draft else { return }
            if found != self.suggestions { self.suggestions = found }
        }
    }

    /// The draft is blank: no suggestions, none opened, none asked for.
    func clear() {
        task?.cancel()
        asked = nil
        suggestions = []
        openedID = nil
    }

    /// The user changed: what was suggested to the one before goes.
    func forget() {
        suggestions = []
        articleID = nil
    }

    /// The conversation is stopping: no ask goes out.
    func cancel() {
        task?.cancel()
    }
}
