import Deadlines
import Foundation
import Logging
import Synchronization
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskTracing

/// Other replicas: a change here is announced through the store's `LiveBus`, and what they
/// announce wakes the streams held here.
extension LiveHub {
    struct Announcement: Codable {
        var origin: String
        var user: String
        var typingUntil: Double?
        /// Some of the user's tokens ended.
        var tokens: Bool? = nil
        /// The W3C `traceparent` of the change (tracing on).
        var trace: String? = nil
    }

    /// What another process (`threaddesk admin`) announces when it ended every token of `user`:
    /// each replica's streams of theirs check their tokens and end.
    static func tokensEndedAnnouncement(for user: UserID) -> String {
        let announcement = Announcement(origin: "admin", user: user.rawValue, typingUntil: nil, tokens: true)
        return (try? JSONEncoder().encode(announcement)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Queues `announcement` for the one sender task: a user changed twice before it ran is
    /// announced once, so what waits is bounded by the number of users, not of changes.
    func announce(_ announcement: Announcement) {
        guard bus != nil, let payload = try? JSONEncoder().encode(announcement) else { return }
        let text = String(decoding: payload, as: UTF8.self)
        let kind = announcement.tokens == true ? "tokens:" : announcement.typingUntil == nil ? "changed:" : "typing:"
        let key = kind + announcement.user
        state.withLock { $0.outbox[key] = text }
        outboxSignal.signal()
    }

    /// Sends what `announce` queued, all of it at once: the bus packs it into as few NOTIFYs as
    /// their size allows (bounded by the store's query deadline).
    func sendAnnouncements(_ bus: any LiveBus) async {
        while await outboxSignal.wait() {
            let batch = state.withLock { state in
                defer { state.outbox.removeAll() }
                return state.outbox
            }
            guard !batch.isEmpty else { continue }
            do {
                try await bus.announce(Array(batch.values))
            } catch {
                // Changes catch up at the streams' next wake-up or reconnection; an ended token
                // has no later signal, so its announcement is tried again until it goes out.
                logger.notice("Could not announce live events to other replicas", metadata: ["error": "\(error)", "count": "\(batch.count)"])
                let tokens = batch.filter { $0.key.hasPrefix("tokens:") }
                guard !tokens.isEmpty else { continue }
                state.withLock { state in state.outbox.merge(tokens) { queued, _ in queued } }
                guard (try? await cancellableSleep(for: .seconds(1))) != nil else { return }
                outboxSignal.signal()
            }
        }
    }

    func received(_ payload: String) {
        guard let announcement = try? JSONDecoder().decode(Announcement.self, from: Data(payload.utf8)),
            announcement.origin != origin, let user = UserID(storageKey: announcement.user)
        else { return }
        if announcement.tokens == true {
            deliver(user, .tokensChanged)
        } else if let until = announcement.typingUntil {
            deliver(user, .typing(expiresAt: Date(timeIntervalSince1970: until)))
        } else {
            deliver(user, .changed, trace: traces.context(traceparent: announcement.trace))
        }
    }
}
