import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// What the app says about its user: attributes merged under the user's lock (two devices never
/// lose each other's keys), a change told to the app's webhooks (`user.updated`) in the same
/// turn, and activity appended, the newest 50 kept.
struct ProfileService: Sendable {
    let users: UserSerializer
    let store: any UserProfiles
    /// `user.updated` for the app's webhooks; nil: none.
    let webhooks: WebhookEvents?
    let now: @Sendable () -> Date

    /// Merges `update` into the user's attributes (`nil` removes a key).
    /// - Throws: `ProfileRules.Violation` naming the key (nothing is kept); the store's errors.
    func setAttributes(_ update: [String: AttributeValue?], for id: UserID) async throws -> UserAttributes {
        // Not `.brief`: the body reads and writes through the store's own connections, which on
        // PostgreSQL must not come from the pool whose connection holds the user's lock.
        try await users.withUser(id) { context in
            // Erased while this request waited its turn: nothing may be kept for the id.
            guard context.record != nil else { throw SupportFailure.notAuthenticated }
            let current = try await store.profile(of: id)
            let merged = try ProfileRules.merged(current.attributes, update)
            guard merged != current.attributes else {
                return UserAttributes(attributes: merged, updatedAt: current.attributesUpdatedAt.map(Self.timestamp))
            }
            let date = now()
            try await store.setAttributes(merged, of: id, at: date)
            webhooks?.record(.userUpdated, app: id.app, owner: id, data: UserUpdatedEvent(id, attributes: merged), at: date, in: &context)
            return UserAttributes(attributes: merged, updatedAt: merged.isEmpty ? nil : Self.timestamp(date))
        }
    }

    /// Keeps one thing the user did (once per the app's id of it).
    /// - Returns: The event as kept, and whether it is new.
    /// - Throws: `ProfileRules.Violation` naming the field; the store's errors.
    func record(_ event: ActivityEvent, for id: UserID) async throws -> (RecordedActivity, created: Bool) {
        let checked = try ProfileRules.activity(event, now: now())
        let kept = ActivityRecord(id: checked.id, name: checked.name, properties: checked.properties, occurredAt: checked.occurredAt)
        let created = try await store.recordActivity(kept, of: id, keep: ActivityEvent.keptPerUser)
        // Sent again: the answer is the event as the first send kept it, not as this one says.
        let stored = created ? kept : try await store.profile(of: id).activity.first { $0.id == kept.id } ?? kept
        return (RecordedActivity(id: stored.id, name: stored.name, occurredAt: Self.timestamp(stored.occurredAt)), created)
    }

    static func timestamp(_ date: Date) -> String { date.formatted(.iso8601) }
}

/// The `data` of `user.updated`: the user's attributes as they now are.
struct UserUpdatedEvent: Encodable, Sendable {
    let userId: String
    let attributes: [String: AttributeValue]

    init(_ id: UserID, attributes: [String: AttributeValue]) {
        userId = id.local.rawValue
        self.attributes = attributes
    }
}
