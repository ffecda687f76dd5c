import DiscordGateway
import DiscordREST
import Logging
import Synchronization

/// Every app's FAQ forum mirror, and which one a gateway event about a FAQ post is for: the one
/// whose book holds the post, or (a post none knows yet, with several forums) the one of the
/// post's parent forum, read from Discord once per post.
final class FAQForums: Sendable {
    let mirrors: [FAQMirror]
    let discord: DiscordClient<AnyClock>
    let logger: Logger
    /// Posts whose forum was read from Discord (a post is in one forum for good).
    private let parents = Mutex<[String: String]>([:])

    init(_ mirrors: [FAQMirror], discord: DiscordClient<AnyClock>, logger: Logger) {
        (self.mirrors, self.discord, self.logger) = (mirrors, discord, logger)
    }

    /// Events may have been missed (a gap): every forum is read again.
    func reload() {
        for mirror in mirrors { mirror.reload() }
    }

    /// Hands a FAQ event to its forum's mirror (who may answer changed: to every one).
    /// - Returns: Whether a mirror took it in.
    func apply(_ event: ForumEvent) async -> Bool {
        guard !mirrors.isEmpty else { return false }
        let post: String
        switch event {
        case .faqPost(let thread, _, _), .faqStarterChanged(let thread), .faqPostDeleted(let thread): post = thread
        case .faqStarter(let message): post = message.channelId
        case .faqAccessChanged:
            var applied = false
            for mirror in mirrors where await mirror.apply(event) { applied = true }
            return applied
        default: return false
        }
        guard let mirror = await mirror(of: post) else { return false }
        return await mirror.apply(event)
    }

    private func mirror(of post: String) async -> FAQMirror? {
        if mirrors.count == 1 { return mirrors[0] }
        for mirror in mirrors where await mirror.book.held(post) != nil { return mirror }
        if let known = parents.withLock({ $0[post] }) { return mirrors.first { $0.forumID == known } }
        do {
            guard let parent = try await discord.channel(post).parentId else { return nil }
            parents.withLock { $0[post] = parent }
            return mirrors.first { $0.forumID == parent }
        } catch {
            // The forum's next read (after the next gap) takes the post in.
            logger.notice("Could not tell which FAQ forum a post is in", metadata: ["post": "\(post)", "error": "\(error)"])
            return nil
        }
    }
}
