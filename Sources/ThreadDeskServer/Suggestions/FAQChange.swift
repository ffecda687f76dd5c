import Foundation

/// What one replica tells the others on the live bus: a FAQ post changed, or who may write
/// answers did. Not a live event's shape, so the live hub passes it by.
struct FAQChange: Codable, Equatable {
    var origin: String
    var post: String?
    var access: Bool?
    /// The FAQ forum it is about (each app has its own); nil from a replica of a version before.
    var forum: String?

    init(origin: String, post: String? = nil, access: Bool? = nil, forum: String? = nil) {
        (self.origin, self.post, self.access, self.forum) = (origin, post, access, forum)
    }

    private enum CodingKeys: String, CodingKey { case origin = "faqOrigin", post = "faqPost", access = "faqAccess", forum = "faqForum" }

    init?(_ payload: String) {
        guard let change = try? JSONDecoder().decode(FAQChange.self, from: Data(payload.utf8)) else { return nil }
        self = change
    }

    var payload: String { String(decoding: (try? JSONEncoder().encode(self)) ?? Data(), as: UTF8.self) }
}
