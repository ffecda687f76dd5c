import Foundation

/// Pushes: what a ThreadDesk push brings is fetched when the stream is not live to bring it.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
extension SupportConversation {
    /// A ThreadDesk push came (the app was woken, or the user tapped it): the badge's count, and
    /// the message it announces fetched when the stream is not live to bring it, kept at once
    /// (the app may be suspended again right after).
    public func receive(_ push: SupportPush) async {
        guard isForThisUser(push.userID) else { return }
        if let badge = push.badge, badge != history.unreadCount { history.unreadCount = badge }
        await catchUpUnlessLive()
    }

    /// A rating push came: the request it names fetched when the stream is not live to bring it,
    /// so ``ratingRequest`` is set when the screen opens.
    public func receive(_ push: SupportRatingPush) async {
        guard isForThisUser(push.userID) else { return }
        if let badge = push.badge, badge != history.unreadCount { history.unreadCount = badge }
        guard ratingRequest?.conversationId != push.conversationID else { return }
        await catchUpUnlessLive()
    }

    /// A push for another user (the app signed in as someone else since) changes nothing here.
    private func isForThisUser(_ pushed: String?) -> Bool {
        guard let pushed, let userID = history.userID else { return true }
        return pushed == userID || pushed == Self.localPart(of: userID)
    }

    /// What the server has that is not here, kept at once; the stream brings it when live. A push
    /// can come before the conversation ever ran: the kept session opens without the network.
    private func catchUpUnlessLive() async {
        guard live.connection != .live else { return }
        if history.userID == nil {
            guard let session = try? await client.open() else { return }
            let snapshot = await deviceStore.load(for: session.userId)
            let entries = (try? await client.pendingMessages()) ?? []
            if session.userId != history.userID { adopt(userID: session.userId, snapshot, entries: entries) }
        }
        await live.synchronize()
        await history.saveNow()
    }

    /// A push names the user as the app knows them (without the server's app prefix).
    private static func localPart(of userID: String) -> String {
        userID.split(separator: "/", maxSplits: 1).last.map(String.init) ?? userID
    }
}
