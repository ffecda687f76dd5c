import APNs
import Deadlines
import DiscordGateway
import DiscordREST
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskStore

extension SupportService: ForumEventSink {
    static let handledUpToKey = "gateway.handled-up-to"

    /// Handles what the gateway saw, in order. A failure for one event leaves it to the next
    /// catch-up instead of holding up the others.
    public func deliver(_ events: [ForumEvent]) async {
        await WaitTracker.$current.withValue(waits ?? WaitTracker.current) {
            await WaitTracker.run(job: "gateway events") { await handle(events) }
        }
    }

    private func handle(_ events: [ForumEvent]) async {
        var newest: String?
        for event in events {
            switch event {
            case .messageCreated(let message):
                do {
                    try await Deadline.within(configuration.requestTimeout) { try await handleMessage(message) }
                    if newest.map({ $0.snowflakeLess(message.id) }) ?? true { newest = message.id }
                } catch {
                    logger.warning("Could not handle a message; the catch-up will retry", metadata: ["error": "\(error)"])
                }
            case .threadDeleted(let threadID):
                await forgetThread(threadID)
            case .gap:
                await catchUp(reason: "gateway gap")
            case .messageUpdated, .messageDeleted, .threadUpdated:
                break
            }
        }
        if let newest { await advanceHandledMark(to: newest) }
    }

    /// Pushes a visible support reply to the thread's owner, once.
    func handleMessage(_ message: DiscordMessage) async throws {
        guard let owner = try await store.userID(forThread: message.channelId) else { return }
        let bot = try await discordCall { try await botUserID() }
        guard MessageVisibility(of: message, botUserID: bot).isSupportReply else { return }
        try await withUser(owner) { context in
            guard var record = context.record, record.threadID == message.channelId else { return }
            guard !Self.alreadyNotified(message.id, record) else { return }
            record.unreadCount += 1
            if let token = record.pushToken, let apns {
                let environment = record.pushEnvironment.map { APNsEnvironment(rawValue: $0.rawValue)! } ?? apns.settings.defaultEnvironment
                do {
                    try await sendPush(for: message, badge: record.unreadCount, to: token, environment: environment, user: owner, via: apns)
                } catch APNsError.rejected(let status, let reason, _) where reason.invalidatesDeviceToken {
                    logger.notice("APNs says the device token is gone; removing it", metadata: ["user": "\(owner)", "status": "\(status)"])
                    record.pushToken = nil
                    record.pushEnvironment = nil
                } catch APNsError.rejected(let status, let reason, _) {
                    // Retrying would be refused the same way.
                    logger.error("APNs refused a push", metadata: ["user": "\(owner)", "status": "\(status)", "reason": "\(reason)"])
                } catch {
                    // Nothing recorded: the catch-up pushes it once APNs answers again.
                    metrics.pushes(outcome: "unavailable")
                    throw error
                }
            }
            record.recentNotifiedIDs = Array((record.recentNotifiedIDs + [message.id]).suffix(UserRecord.recentNotifiedLimit))
            if record.lastNotifiedMessageID.map({ $0.snowflakeLess(message.id) }) ?? true { record.lastNotifiedMessageID = message.id }
            record.updatedAt = Date()
            context.record = record
        }
    }

    /// Seen before, or older than anything still remembered.
    static func alreadyNotified(_ id: String, _ record: UserRecord) -> Bool {
        if record.recentNotifiedIDs.contains(id) { return true }
        guard record.recentNotifiedIDs.count >= UserRecord.recentNotifiedLimit, let oldest = record.recentNotifiedIDs.first else { return false }
        return id.snowflakeLess(oldest)
    }

    private func sendPush(
        for message: DiscordMessage, badge: Int, to token: String, environment: APNsEnvironment, user: UserID, via apns: PushSender
    ) async throws(APNsError) {
        let text = message.content.isEmpty ? Self.attachmentSummary(message) : message.content
        let alert = APNsNotification(
            title: push.title, body: text, badge: badge, sound: push.sound, threadID: user.rawValue, category: push.category,
            custom: ["messageId": message.id])
        try await apns.client.send(alert, to: token, environment: environment)
        metrics.pushes(outcome: "sent")
        if push.background {
            try? await apns.client.send(
                APNsNotification(pushType: .background, badge: badge, custom: ["messageId": message.id]), to: token, environment: environment)
        }
    }

    static func attachmentSummary(_ message: DiscordMessage) -> String {
        message.attachments.count == 1 ? "📎 \(message.attachments[0].filename)" : "📎 \(message.attachments.count) files"
    }

    /// A thread deleted in Discord: the next message from the user starts a new one.
    private func forgetThread(_ threadID: String) async {
        do {
            guard let owner = try await store.userID(forThread: threadID) else { return }
            try await withUser(owner) { context in
                if context.record?.threadID == threadID { context.record?.threadID = nil }
            }
        } catch {
            logger.warning("Could not forget a deleted thread", metadata: ["error": "\(error)"])
        }
    }

    private func advanceHandledMark(to id: String) async {
        do {
            let current = try await store.globalValue(Self.handledUpToKey)
            if current.map({ $0.snowflakeLess(id) }) ?? true { try await store.setGlobalValue(Self.handledUpToKey, to: id) }
        } catch {
            logger.warning("Could not record the gateway mark", metadata: ["error": "\(error)"])
        }
    }
}

