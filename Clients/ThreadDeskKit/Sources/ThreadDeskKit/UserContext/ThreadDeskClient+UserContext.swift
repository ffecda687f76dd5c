import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The user's context beside the conversation: attributes (who they are in the app's terms) and
/// activity (what they just did), kept on the device and sent with the session, like the outbox.
extension ThreadDeskClient {
    /// Tells support about the user in the app's own terms: merged with what it knows (a later
    /// value of a key replaces an earlier one; nil removes the key).
    ///
    /// ```swift
    /// try await support.setAttributes(["plan": "pro", "seats": 3, "trialEnds": trialEnd, "coupon": nil])
    /// ```
    ///
    /// Checked here with the server's rules first: keys of 1–40 `a-z 0-9 _`, text of one line of at
    /// most 256 characters, finite numbers, ISO 8601 dates, at most 50 keys; a break throws a ``ThreadDeskError`` of kind
    /// ``ThreadDeskError/Kind-swift.struct/invalidInput`` (code `ErrorCode.invalidAttributes`, the
    /// key named) and keeps nothing of the call. Otherwise the change is kept on the device at
    /// once (surviving a relaunch) and sent with the session: now when one is open, else after
    /// ``open(installation:)``, and whenever a ``SupportConversation`` goes live again.
    public func setAttributes(_ attributes: [String: (any AttributeValueConvertible)?]) throws(ThreadDeskError) {
        var changes: [String: AttributeValue?] = [:]
        for (key, value) in attributes {
            let value = value?.attributeValue
            try UserContextRules.check(key, value, code: .invalidAttributes)
            changes[key] = .some(value)
        }
        var backlog = try loadBacklog()
        backlog.attributes.merge(changes) { $1 }
        let keys = backlog.keysAfterPending
        guard keys.count <= AttributesUpdate.keyLimit else {
            throw .invalidInput(.invalidAttributes, "\(keys.count) keys (at most \(AttributesUpdate.keyLimit)); remove some with nil")
        }
        // The changes that wait go in one update, which holds at most as many keys.
        guard backlog.attributes.count <= AttributesUpdate.keyLimit else {
            throw .invalidInput(
                .invalidAttributes, "\(backlog.attributes.count) changes waiting to be sent (at most \(AttributesUpdate.keyLimit) in one update)")
        }
        try keep(backlog)
        sendUserContextSoon()
    }

    /// Tells support the user did `name` (`export_failed`, `checkout.started`: 1–64 of
    /// `a-z 0-9 _ .`), with at most 10 `properties` checked as attributes are, at `date`.
    /// Kept on the device under a new id that every attempt sends (the server keeps an event
    /// once however often it arrives) and sent with the session as ``setAttributes(_:)`` is; the
    /// newest 50 unsent events wait, older ones are dropped. Throws as ``setAttributes(_:)``
    /// does, with code `ErrorCode.invalidActivity`.
    @discardableResult
    public func track(
        _ name: String, properties: [String: any AttributeValueConvertible] = [:], at date: Date = Date()
    ) throws(ThreadDeskError) -> ActivityEvent {
        guard UserContextRules.isActivityName(name) else {
            throw .invalidInput(.invalidActivity, "\(name.prefix(80)): a name is 1–\(ActivityEvent.nameLength) of a-z, 0-9, _ and .")
        }
        guard properties.count <= ActivityEvent.propertyLimit else {
            throw .invalidInput(.invalidActivity, "\(name): \(properties.count) properties (at most \(ActivityEvent.propertyLimit))")
        }
        var values: [String: AttributeValue] = [:]
        for (key, value) in properties {
            try UserContextRules.check(key, value.attributeValue, code: .invalidActivity)
            values[key] = value.attributeValue
        }
        let event = ActivityEvent(
            id: UUID().uuidString.lowercased(), name: name, properties: values, occurredAt: AttributeValue.date(date).dateText)
        var backlog = try loadBacklog()
        backlog.activity.append(event)
        if backlog.activity.count > ActivityEvent.keptPerUser { backlog.activity.removeFirst(backlog.activity.count - ActivityEvent.keptPerUser) }
        try keep(backlog)
        sendUserContextSoon()
        return event
    }

    /// What waits to be sent: attribute changes and events, oldest first.
    public func pendingUserContext() throws(ThreadDeskError) -> UserContextBacklog {
        try loadBacklog()
    }

    /// Sends what waits (attributes first, then the events oldest first), one send at a time:
    /// what the client does by itself after ``open(installation:)``, a change, or the
    /// conversation going live; call it when the app knows the network is back. An item the
    /// server refuses for good (400) is dropped and reported; at the first other failure (no
    /// session or network, 429, 5xx, after the configured attempts) the rest waits.
    @discardableResult
    public func sendUserContext() async -> UserContextReport {
        let run = SerialRun.after(userContextSending) { await self.sendBacklog() }
        userContextSending = run
        return await SerialRun.value(of: run)
    }

    /// Starts a send when a session is open and something waits.
    func sendUserContextSoon() {
        guard session != nil, (try? loadBacklog())?.isEmpty == false else { return }
        Task { await self.sendUserContext() }
    }

    /// Forgets what waits (sign-out, erasure): it was about the user signed out.
    func forgetUserContext() throws(ThreadDeskError) {
        userContextBacklog = UserContextBacklog()
        do {
            try configuration.userContext.save(nil)
        } catch {
            throw .invalidResponse("the user context store failed: \(error)")
        }
    }

    private func loadBacklog() throws(ThreadDeskError) -> UserContextBacklog {
        if let userContextBacklog { return userContextBacklog }
        do {
            let loaded = try configuration.userContext.load() ?? UserContextBacklog()
            userContextBacklog = loaded
            return loaded
        } catch {
            throw .invalidResponse("the user context store failed: \(error)")
        }
    }

    /// The backlog in memory and on disk in one step (no suspension between them).
    private func keep(_ backlog: UserContextBacklog) throws(ThreadDeskError) {
        do {
            try configuration.userContext.save(backlog)
        } catch {
            throw .invalidResponse("the user context store failed: \(error)")
        }
        userContextBacklog = backlog
    }

    private func sendBacklog() async -> UserContextReport {
        var report = UserContextReport()
        // Only under the first session it sends with: another user's session stops it.
        var owner = session?.userId
        func sameUser() -> Bool {
            if owner == nil { owner = session?.userId }
            return owner == nil || session?.userId == owner
        }
        do throws(ThreadDeskError) {
            while let update = try loadBacklog().attributes.nilIfEmpty, !Task.isCancelled, sameUser() {
                do throws(ThreadDeskError) {
                    let kept = try await putAttributes(update)
                    report.attributes = kept
                    try settle(sent: update, kept: kept)
                } catch where Self.isRefusedForGood(error) {
                    let dropped = UserContextRules.key(namedIn: error.message, among: update.keys).map { [$0] } ?? Set(update.keys)
                    try drop(dropped, asSent: update)
                    refused(UserContextRefusal(item: .attributes(dropped.sorted()), error: error), in: &report)
                }
            }
            while let event = try loadBacklog().activity.first, !Task.isCancelled, sameUser() {
                do throws(ThreadDeskError) {
                    report.recorded.append(try await postActivity(event))
                    try removeEvent(event.id)
                } catch where Self.isRefusedForGood(error) {
                    try removeEvent(event.id)
                    refused(UserContextRefusal(item: .activity(event), error: error), in: &report)
                }
            }
        } catch {
            report.failure = error
        }
        return report
    }

    private func refused(_ refusal: UserContextRefusal, in report: inout UserContextReport) {
        report.refused.append(refusal)
        configuration.userContextRefused?(refusal)
    }

    /// Sending it again cannot change the answer: a rule of the server's refused it.
    private static func isRefusedForGood(_ error: ThreadDeskError) -> Bool {
        error.isServer(status: 400) || error.isServer(status: 413) || error.isServer(status: 422)
    }

    private func putAttributes(_ update: [String: AttributeValue?]) async throws(ThreadDeskError) -> UserAttributes {
        try await withRetries(attempts: configuration.sendAttempts) { token throws(ThreadDeskError) in
            var request = request("v1/attributes", method: "PUT", token: token)
            try encode(AttributesUpdate(attributes: update), into: &request)
            return try decode(UserAttributes.self, from: try await transport.send(request))
        }
    }

    private func postActivity(_ event: ActivityEvent) async throws(ThreadDeskError) -> RecordedActivity {
        try await withRetries(attempts: configuration.sendAttempts) { token throws(ThreadDeskError) in
            var request = request("v1/activity", method: "POST", token: token)
            try encode(event, into: &request)
            return try decode(RecordedActivity.self, from: try await transport.send(request))
        }
    }

    /// The server has `sent`: each change that was not replaced meanwhile leaves the backlog.
    private func settle(sent: [String: AttributeValue?], kept: UserAttributes) throws(ThreadDeskError) {
        var backlog = try loadBacklog()
        for (key, value) in sent where backlog.attributes[key] == .some(value) { backlog.attributes[key] = nil }
        backlog.serverKeys = Set(kept.attributes.keys)
        try keep(backlog)
    }

    private func drop(_ keys: Set<String>, asSent sent: [String: AttributeValue?]) throws(ThreadDeskError) {
        var backlog = try loadBacklog()
        for key in keys where backlog.attributes[key] == sent[key] { backlog.attributes[key] = nil }
        try keep(backlog)
    }

    private func removeEvent(_ id: String) throws(ThreadDeskError) {
        var backlog = try loadBacklog()
        backlog.activity.removeAll { $0.id == id }
        try keep(backlog)
    }
}

extension AttributeValue {
    /// The ISO 8601 text of a date value.
    var dateText: String? {
        if case .date(let text) = self { text } else { nil }
    }
}

extension Dictionary {
    var nilIfEmpty: Self? { isEmpty ? nil : self }
}
