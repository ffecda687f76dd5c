import Deadlines
import DiscordGateway
import DiscordREST
import Logging

/// The gateway's FAQ events: each into the book at once, and word of it to the other replicas.
extension FAQMirror {
    /// The gateway's FAQ events into the book, and word of them to the other replicas; false for
    /// any other event.
    func apply(_ event: ForumEvent) async -> Bool {
        let post: String
        switch event {
        case .faqPost(let thread, _, _), .faqStarterChanged(let thread), .faqPostDeleted(let thread): post = thread
        case .faqStarter(let message): post = message.channelId
        case .faqAccessChanged:
            // The next post or edit is judged by the roles and overwrites as they are now, here
            // and on the other replicas.
            authors.forget()
            await announce(FAQChange(origin: origin, access: true, forum: forumID))
            return true
        default: return false
        }
        let applied = await applyHere(event)
        snapshots?.keep()
        await announce(FAQChange(origin: origin, post: post, forum: forumID))
        return applied
    }

    private func applyHere(_ event: ForumEvent) async -> Bool {
        switch event {
        case .faqPost(let thread, let title, let tags):
            if await !book.knowsTags(tags) { try? await refreshTags() }
            await book.post(thread, title: title, tagIDs: tags, at: time.now())
        case .faqStarter(let message):
            do {
                try await Deadline.within(.seconds(30)) { try await take(message, post: message.channelId) }
            } catch {
                // Left as it was: a new post is no answer yet, an answer keeps its last words.
                logger.warning("Could not tell whether a FAQ post's author may answer", metadata: ["thread": "\(message.channelId)", "error": "\(error)"])
            }
        case .faqStarterChanged(let thread):
            do {
                try await Deadline.within(.seconds(30)) {
                    if let message = try await starter(of: thread) {
                        try await take(message, post: thread)
                    } else {
                        await book.remove(thread)
                    }
                }
            } catch {
                logger.warning("Could not read an edited FAQ answer", metadata: ["thread": "\(thread)", "error": "\(error)"])
            }
        case .faqPostDeleted(let thread):
            await book.remove(thread)
        default:
            return false
        }
        return true
    }
}
