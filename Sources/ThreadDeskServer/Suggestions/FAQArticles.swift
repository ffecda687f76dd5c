import Crypto
import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// The book's answers as the help center lists them: by title (any case, then by id), each with
/// a digest of what a reader sees, and one digest of them all. Built once per change of the book
/// and handed out as a value, so a page is cut from it without holding the book.
struct FAQArticles: Sendable {
    struct Entry: Sendable {
        let id: String
        /// The id as a number: ties of titles go by it, as Discord made the posts.
        let number: UInt64
        let title: String
        /// The title in the order's terms (case folded).
        let key: String
        /// The answer, its keywords line taken out (as suggested).
        let text: String
        /// The names of its tags the forum knows, in the post's order.
        let tags: [String]
        let attachments: [MirroredMessage.Attachment]
        let updatedAt: Date
        /// What a reader sees of it, hashed: the article's validator.
        let digest: String

        /// Whether it comes before the place (`key`, `number`) in the listing's order.
        func precedes(key other: String, number otherNumber: UInt64) -> Bool {
            key != other ? key < other : number < otherNumber
        }
    }

    /// Every article, by title.
    let byTitle: [Entry]
    /// Each article's place in `byTitle`, by id.
    let places: [String: Int]
    /// Every tag an article carries, by name, in any case's order.
    let tags: [String]
    /// Every article's digest and the tags, hashed: the validator of every page cut from it.
    let digest: String

    init(posts: [String: FAQBook.Post], tagNames: [String: String]) {
        var entries: [Entry] = []
        for (id, post) in posts {
            guard let starter = post.starter, !post.title.isEmpty || !starter.isEmpty, let number = UInt64(id) else { continue }
            let names = post.tagIDs.compactMap { tagNames[$0] }
            let answer = CuratedAnswer.post(id: id, title: post.title, starter: starter, tagNames: names)
            // A snapshot from before `updatedAt`: the post's creation, the same on every replica.
            let updatedAt = post.updatedAt ?? Snowflake(number).date
            entries.append(
                Entry(
                    id: id, number: number, title: post.title, key: Self.key(post.title), text: answer.text, tags: names,
                    attachments: post.attachments, updatedAt: updatedAt,
                    digest: Self.digest(id: id, title: post.title, text: answer.text, tags: names, attachments: post.attachments, updatedAt: updatedAt)))
        }
        entries.sort { $0.precedes(key: $1.key, number: $1.number) }
        byTitle = entries
        places = Dictionary(entries.enumerated().map { ($0.element.id, $0.offset) }, uniquingKeysWith: { first, _ in first })
        var seen: Set<String> = []
        tags = entries.flatMap(\.tags).filter { seen.insert($0).inserted }.sorted { ($0.lowercased(), $0) < ($1.lowercased(), $1) }
        var hasher = SHA256()
        for entry in entries { hasher.update(data: Data((entry.digest + "\n").utf8)) }
        for tag in tags { hasher.update(data: Data((tag + "\u{1F}").utf8)) }
        digest = Self.hex(hasher.finalize())
    }

    /// A title in the listing's order: case folded, so `apple` and `Banana` sort as a reader expects.
    static func key(_ title: String) -> String { title.lowercased() }

    /// The first place after (`key`, `number`) in `byTitle`.
    func place(after key: String, number: UInt64) -> Int {
        var (low, high) = (0, byTitle.count)
        while low < high {
            let middle = (low + high) / 2
            let entry = byTitle[middle]
            if entry.precedes(key: key, number: number) || (entry.key == key && entry.number == number) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private static func digest(
        id: String, title: String, text: String, tags: [String], attachments: [MirroredMessage.Attachment], updatedAt: Date
    ) -> String {
        // As a JSON array: no field's text can pass for the boundary of another. Files by what a
        // reader sees, not their URLs (Discord signs them afresh on every read).
        var parts = [id, title, text, tags.joined(separator: "\u{1F}"), String(updatedAt.timeIntervalSince1970)]
        for file in attachments {
            parts.append([file.id.description, file.filename, String(file.size), file.contentType ?? "", file.width.map(String.init) ?? "", file.height.map(String.init) ?? ""].joined(separator: "\u{1F}"))
        }
        let data = (try? JSONEncoder().encode(parts)) ?? Data()
        return hex(SHA256.hash(data: data))
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String {
        digest.map { byte in String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }.joined()
    }
}
