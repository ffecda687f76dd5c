import Logging
import APNs
import Foundation
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

extension PushDispatcher {
    /// One alert asking the user to rate the conversation `conversation` that was just closed: no
    /// message is named (`PushPayload.ratingConversationID` instead), the badge stays as it is. One
    /// attempt: the request also waits in the user's stream and next page, so a lost push loses
    /// nothing. A token APNs says is gone is removed, as for replies.
    func sendRatingRequest(to owner: UserID, conversation: Int64, text: String) async {
        guard let record = try? await store.user(owner), let token = record.pushToken, let app = catalog.app(of: owner) else { return }
        let topic = app.apnsTopic ?? apns.settings.topic
        let environment = record.pushEnvironment.map { APNsEnvironment(rawValue: $0.rawValue)! } ?? apns.settings.defaultEnvironment
        var alert = APNsNotification(
            title: settings.title, body: text, sound: settings.sound, threadID: owner.local.rawValue, category: settings.category,
            custom: [PushPayload.ratingConversationID: String(conversation)], collapseID: "rating-\(conversation)")
        alert.topic = topic
        do {
            try await apns.client.send(alert, to: token, environment: environment)
            metrics.pushes(outcome: "sent", app: owner.app)
        } catch APNsError.rejected(let status, let reason, _) where reason.invalidatesDeviceToken {
            logger.notice("APNs says the device token is gone; removing it", metadata: ["user": "\(owner.logValue)", "status": "\(status)"])
            _ = try? await store.withUser(owner) { context in
                guard context.record?.pushToken == token else { return }
                context.record?.pushToken = nil
                context.record?.pushEnvironment = nil
            }
            metrics.pushes(outcome: "unregistered", app: owner.app)
        } catch {
            logger.notice("The rating request's push did not go out", metadata: ["user": "\(owner.logValue)", "error": "\(error)"])
            metrics.pushes(outcome: "unavailable", app: owner.app)
        }
    }
}
