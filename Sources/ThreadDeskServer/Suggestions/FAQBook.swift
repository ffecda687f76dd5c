import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// The curated answers, in memory: the FAQ forum's posts as the gateway and the start-up load
/// told them. Suggestions are ranked here, with no Discord call and no store read; the index is
/// rebuilt on the first query after a change.
actor FAQBook {
    struct Post: Sendable, Hashable, Codable {
        var title: String
        var tagIDs: [String]
        /// The starter message's text; nil until it is known (a post is an answer from then on).
        var starter: String?
        /// The starter's files.
        var attachments: [MirroredMessage.Attachment] = []
        /// When a reader last saw it change: the starter's edit (or post) time as Discord stamped
        /// it, or the server's clock for a title or tags (Discord stamps no thread change). nil in
        /// snapshots of versions before it (the help center then says the post's creation).
        var updatedAt: Date? = nil

        /// `new` in place of `held`: the time moves only when what a reader sees changed.
        static func revised(_ held: Post?, to new: Post, now: Date) -> Post {
            var post = new
            guard let held else {
                post.updatedAt = new.updatedAt ?? now
                return post
            }
            // Files by id: Discord signs their URLs afresh on every read.
            let sameText = held.starter == new.starter && held.attachments.map(\.id) == new.attachments.map(\.id)
            let sameHead = held.title == new.title && held.tagIDs == new.tagIDs
            if sameText && sameHead {
                post.updatedAt = held.updatedAt ?? new.updatedAt
                return post
            }
            var changed = held.updatedAt ?? .distantPast
            if !sameText { changed = max(changed, new.updatedAt ?? now) }
            if !sameHead { changed = max(changed, now) }
            post.updatedAt = changed
            return post
        }
    }

    private var posts: [String: Post] = [:]
    private var tagNames: [String: String] = [:]
    private var index: SuggestionIndex?
    /// The answers as the help center lists them, built on the first ask after a change.
    private var listed: FAQArticles?
    /// Posts the gateway spoke of since the REST load began: what it said is newer than the load.
    private var touched: Set<String> = []
    /// Posts deleted: a late starter or the load must not bring them back.
    private var deleted: Set<String> = []

    /// Answers currently held.
    var count: Int { posts.values.count { $0.starter != nil } }

    /// The answers that match what the user is typing, best first.
    /// - Parameters:
    ///   - query: The user's text so far.
    ///   - limit: Answers at most.
    func suggestions(for query: String, limit: Int = SuggestionIndex.maxResults) -> [CuratedAnswer] {
        currentIndex().suggestions(for: query, limit: limit)
    }

    /// The help center's articles, by title, with their digest: one value, read outside the book.
    func articles() -> FAQArticles {
        if let listed { return listed }
        let built = FAQArticles(posts: posts, tagNames: tagNames)
        listed = built
        return built
    }

    /// The articles and the ids of every answer matching `query`, best first (the suggestions'
    /// ranking, past its first five), from one state of the book.
    func search(_ query: String) -> (articles: FAQArticles, ranked: [String]) {
        let index = currentIndex()
        return (articles(), index.ranked(for: query, limit: index.count).map(\.id))
    }

    /// Something the answers are made of changed: the index and the list are built again when asked.
    private func changed() {
        index = nil
        listed = nil
    }

    /// The answer suggested first for `query` and how much of the query it covers (0 to 1, the
    /// same in a forum of any size): whether it is strong enough to be sent with nobody there.
    /// nil when nothing matches.
    /// - Parameter query: The user's message.
    func bestMatch(for query: String) -> (answer: CuratedAnswer, coverage: Double)? {
        currentIndex().bestMatch(for: query)
    }

    /// The index of the answers held, built on the first query after a change.
    private func currentIndex() -> SuggestionIndex {
        if let index { return index }
        let built = SuggestionIndex(answers())
        index = built
        return built
    }

    /// The answer with this id, if the book holds it.
    /// - Parameter id: The post's id (its thread's).
    func answer(_ id: String) -> CuratedAnswer? {
        guard let post = posts[id], let starter = post.starter else { return nil }
        return CuratedAnswer.post(id: id, title: post.title, starter: starter, tagNames: post.tagIDs.compactMap { tagNames[$0] })
    }

    /// The files of an answer.
    /// - Parameter id: The post's id.
    func attachments(of id: String) -> [MirroredMessage.Attachment] { posts[id]?.attachments ?? [] }

    /// A file of any answer, by its id: answers' files are served to every user.
    /// - Parameter id: The attachment's id.
    func attachment(_ id: Snowflake) -> MirroredMessage.Attachment? {
        for post in posts.values where post.starter != nil {
            if let found = post.attachments.first(where: { $0.id == id }) { return found }
        }
        return nil
    }

    /// The forum's tags, whose names answers are found by.
    /// - Parameter tags: Names by tag id.
    func setTags(_ tags: [String: String]) {
        tagNames = tags
        changed()
    }

    /// Whether every tag in `ids` has a name here (otherwise the forum's tags are read again).
    /// - Parameter ids: The tag ids a post carries.
    func knowsTags(_ ids: [String]) -> Bool { ids.allSatisfy { tagNames[$0] != nil } }

    /// A post's title and tags, as a THREAD_CREATE or THREAD_UPDATE (or the load) gives them.
    /// - Parameters:
    ///   - id: The post's id.
    ///   - title: The question.
    ///   - tagIDs: The tags it carries.
    ///   - now: The server's time: Discord stamps no change of a thread.
    func post(_ id: String, title: String, tagIDs: [String], at now: Date) {
        var post = posts[id] ?? Post(title: title, tagIDs: tagIDs)
        post.title = title
        post.tagIDs = tagIDs
        posts[id] = Post.revised(posts[id], to: post, now: now)
        deleted.remove(id)
        touched.insert(id)
        changed()
    }

    /// A post's starter: the answer. A starter whose post is not known yet waits for it.
    /// - Parameters:
    ///   - id: The post's id.
    ///   - content: The answer's text.
    ///   - attachments: Its files.
    ///   - editedAt: When Discord says the starter was last edited (or posted); nil: `now`.
    ///   - now: The server's time.
    func starter(_ id: String, content: String, attachments: [MirroredMessage.Attachment] = [], editedAt: Date? = nil, at now: Date) {
        guard !deleted.contains(id) else { return }
        var post = posts[id] ?? Post(title: "", tagIDs: [])
        post.starter = content
        post.attachments = attachments
        post.updatedAt = editedAt
        posts[id] = Post.revised(posts[id], to: post, now: now)
        touched.insert(id)
        changed()
    }

    /// A post whose starter's author may not answer: no answer, whatever it said before.
    /// - Parameter id: The post's id.
    func withhold(_ id: String) {
        guard !deleted.contains(id) else { return }
        var post = posts[id] ?? Post(title: "", tagIDs: [])
        post.starter = nil
        post.attachments = []
        posts[id] = post
        touched.insert(id)
        changed()
    }

    /// A post deleted: no answer, and a late starter or load does not bring it back.
    /// - Parameter id: The post's id.
    func remove(_ id: String) {
        posts[id] = nil
        deleted.insert(id)
        touched.insert(id)
        changed()
    }

    /// A REST load begins: posts the gateway speaks of from now on are newer than what it reads.
    func beginLoad() { touched = [] }

    /// What a REST load read replaces what was held, except for posts the gateway spoke of since
    /// the load began (newer than what it read).
    /// - Parameters:
    ///   - loaded: Every post the load read, by id (`updatedAt`: its starter's time).
    ///   - now: The server's time, for a title or tags that changed unheard.
    func load(_ loaded: [String: Post], at now: Date) {
        for id in posts.keys where loaded[id] == nil && !touched.contains(id) { posts[id] = nil }
        for (id, post) in loaded where !touched.contains(id) {
            posts[id] = Post.revised(posts[id], to: post, now: now)
            deleted.remove(id)
        }
        changed()
    }

    /// What the book holds, kept in the store so that a server that starts answers at once,
    /// before it has read the forum (`restore`).
    struct Snapshot: Codable, Sendable, Equatable {
        /// The forum it was read from: a snapshot of another forum is no answer here.
        var forum: String
        var posts: [String: Post]
        var tagNames: [String: String]
    }

    /// The answers and the tags' names, for the store.
    /// - Parameter forum: The FAQ forum the book holds.
    func snapshot(forum: String) -> Snapshot {
        Snapshot(forum: forum, posts: posts.filter { $0.value.starter != nil }, tagNames: tagNames)
    }

    /// A snapshot's answers into a book that has not heard anything yet (none when it has: what
    /// it heard is newer). The forum is read afterwards all the same.
    /// - Returns: Whether the snapshot was taken.
    @discardableResult
    func restore(_ snapshot: Snapshot) -> Bool {
        guard posts.isEmpty, deleted.isEmpty, tagNames.isEmpty else { return false }
        posts = snapshot.posts
        tagNames = snapshot.tagNames
        changed()
        return true
    }

    /// Answers a read has so far, suggested before it ends: each one the gateway has not spoken
    /// of since the read began (newer) and that was not deleted.
    /// - Parameters:
    ///   - read: The posts read so far, by id.
    ///   - now: The server's time.
    func add(_ read: [String: Post], at now: Date) {
        for (id, post) in read where !touched.contains(id) && !deleted.contains(id) { posts[id] = Post.revised(posts[id], to: post, now: now) }
        changed()
    }

    /// Posts the forum's lists no longer have (deleted) leave at once, unless the gateway spoke of
    /// them since the read began (newer than the lists).
    /// - Parameter present: Every post the lists have.
    func prune(keeping present: Set<String>) {
        for id in posts.keys where !present.contains(id) && !touched.contains(id) {
            posts[id] = nil
            changed()
        }
    }

    /// Whether the post's starter is held (read or restored), so a reload may keep it.
    func held(_ id: String) -> Post? { posts[id] }

    private func answers() -> [CuratedAnswer] {
        posts.compactMap { id, post in
            guard let starter = post.starter, !post.title.isEmpty || !starter.isEmpty else { return nil }
            return CuratedAnswer.post(id: id, title: post.title, starter: starter, tagNames: post.tagIDs.compactMap { tagNames[$0] })
        }
        .sorted { $0.id < $1.id }
    }
}
