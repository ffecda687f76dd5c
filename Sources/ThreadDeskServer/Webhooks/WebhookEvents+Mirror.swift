import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// The conversation's messages as webhooks tell them: `message.created` (the user's, support's,
/// the assistant's), `message.updated`, `message.deleted`. Only what the user sees: a note never
/// leaves (`ShownChange` has none).
extension WebhookEvents: ShownChangeRecorder {
    func accepted(_ row: MirroredMessage, owner: UserID, in context: inout UserContext) {
        guard isOn else { return }
        record(.messageCreated, app: owner.app, owner: owner, data: WebhookMessage(SupportMessage(row), owner: owner), at: now(), in: &context)
    }

    func stored(_ changes: [ShownChange], owner: UserID) async {
        guard isOn else { return }
        let time = now()
        var made: [WebhookDelivery] = []
        for change in changes {
            switch change {
            case .created(let message):
                made += deliveries(.messageCreated, app: owner.app, owner: owner, data: WebhookMessage(SupportMessage(message), owner: owner), at: time)
            case .updated(let message):
                made += deliveries(.messageUpdated, app: owner.app, owner: owner, data: WebhookMessage(SupportMessage(message), owner: owner), at: time)
            case .deleted(let id):
                made += deliveries(.messageDeleted, app: owner.app, owner: owner, data: WebhookDeletedMessage(id: id.description, userId: owner.local.rawValue), at: time)
            }
        }
        await keep(made)
    }
}
