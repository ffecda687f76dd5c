import Foundation
import Synchronization
import ThreadDeskCore
import ThreadDeskWire

/// Users' attributes, activity and article reads in memory.
struct MemoryProfiles {
    var attributes: [UserID: (values: [String: AttributeValue], at: Date)] = [:]
    /// Per user, newest first.
    var activity: [UserID: [ActivityRecord]] = [:]
    var reads: [ReadKey: Read] = [:]

    struct ReadKey: Hashable {
        var owner: UserID
        var article: String
        var day: Int64
    }

    struct Read {
        var at: Date
        var wrote: Bool
    }

    mutating func erase(_ id: UserID) {
        attributes[id] = nil
        activity[id] = nil
        reads = reads.filter { $0.key.owner != id }
    }
}

extension MemoryStore {
    public func profile(of user: UserID) async throws -> UserProfile {
        profiles.withLock { state in
            let attributes = state.attributes[user]
            return UserProfile(attributes: attributes?.values ?? [:], attributesUpdatedAt: attributes?.at, activity: state.activity[user] ?? [])
        }
    }

    public func setAttributes(_ attributes: [String: AttributeValue], of user: UserID, at date: Date) async throws {
        profiles.withLock { $0.attributes[user] = attributes.isEmpty ? nil : (attributes, date) }
    }

    public func recordActivity(_ event: ActivityRecord, of user: UserID, keep: Int) async throws -> Bool {
        // Only for a user who exists: an event that waited out the user's erasure keeps nothing.
        guard self.state.withLock({ $0.users[user] != nil }) else { return false }
        return profiles.withLock { state in
            var events = state.activity[user] ?? []
            guard !events.contains(where: { $0.id == event.id }) else { return false }
            // Newest first by when it happened; an event of the same moment kept later comes first.
            let index = events.firstIndex { $0.occurredAt <= event.occurredAt } ?? events.endIndex
            events.insert(event, at: index)
            state.activity[user] = Array(events.prefix(max(0, keep)))
            return true
        }
    }

    public func recordArticleRead(_ article: String, by user: UserID, at date: Date) async throws -> Bool {
        guard self.state.withLock({ $0.users[user] != nil }) else { return false }
        return profiles.withLock { state in
            let key = MemoryProfiles.ReadKey(owner: user, article: article, day: ProfileCoding.day(date))
            guard state.reads[key] == nil else { return false }
            state.reads[key] = MemoryProfiles.Read(at: date, wrote: false)
            return true
        }
    }

    public func userWroteAfterReads(_ user: UserID, at date: Date, window: TimeInterval) async throws {
        profiles.withLock { state in
            for (key, read) in state.reads where key.owner == user && read.at <= date && read.at >= date - window {
                state.reads[key]?.wrote = true
            }
        }
    }

    public func articleReads(of user: UserID, limit: Int) async throws -> [ArticleRead] {
        profiles.withLock { state in
            state.reads.filter { $0.key.owner == user }
                .map { ArticleRead(article: $0.key.article, readAt: $0.value.at, wroteAfter: $0.value.wrote) }
                .sorted { ($0.readAt, $0.article) < ($1.readAt, $1.article) }
                .prefix(max(0, limit)).map { $0 }
        }
    }

    public func articleReadTotals(app: AppID, since: Date, limit: Int) async throws -> [ArticleReadTotal] {
        profiles.withLock { state in
            var totals: [String: ArticleReadTotal] = [:]
            for (key, read) in state.reads where key.owner.app == app && read.at >= since {
                var total = totals[key.article] ?? ArticleReadTotal(article: key.article, reads: 0, withoutMessage: 0)
                total.reads += 1
                if !read.wrote { total.withoutMessage += 1 }
                totals[key.article] = total
            }
            return Array(totals.values.sorted { ($1.reads, $0.article) < ($0.reads, $1.article) }.prefix(max(0, limit)))
        }
    }
}
