import Foundation

/// The user's messages on their way: shown at once as pending, kept in the device's outbox and
/// sent (again after a while when no server answered) until the server confirms them; edited,
/// deleted or sent again as the user asks, whether the server has them yet or not.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
final class ConversationSending {
    private let client: ThreadDeskClient
    private let history: ConversationHistory
    private let work: ConversationWork
    private let sleep: @Sendable (Duration) async throws -> Void
    /// The device's messages by their outbox key: waiting to be confirmed, or refused before the
    /// server took them (kept to be sent again). One whose server copy came first (on the stream,
    /// before the answer to its send) is off the screen but still here until its send confirms it.
    private var localEntries: [String: OutboxEntry] = [:]
    /// Keys whose send is under way.
    private var delivering: Set<String> = []
    /// Keys withdrawn while their send was under way.
    private var discarded: Set<String> = []
    /// New texts for messages whose send has been tried already (the key holds the old text):
    /// applied as an edit once the server confirms the message.
    private var pendingEdits: [String: String] = [:]
    /// Sends in a row that found no server, by key: the next waits longer.
    private var attempts: [String: Int] = [:]

    init(client: ThreadDeskClient, history: ConversationHistory, work: ConversationWork, sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.client = client
        self.history = history
        self.work = work
        self.sleep = sleep
    }

    /// The outbox's messages, those not on screen yet (nor known already).
    func show(_ entries: [OutboxEntry]) {
        for entry in entries where localEntries[entry.id] == nil {
            localEntries[entry.id] = entry
            history.timeline.appendLocal(ConversationMessage(pending: entry))
        }
    }

    /// Nothing of the user before stays (a user change).
    func forget() {
        localEntries = [:]
        discarded = []
        pendingEdits = [:]
        attempts = [:]
    }

    /// A new message: shown at once as pending, then sent.
    func send(_ entry: OutboxEntry) {
        localEntries[entry.id] = entry
        history.timeline.appendLocal(ConversationMessage(pending: entry))
        deliver(entry)
    }

    /// Sends a failed message again (or a pending one now).
    func retry(_ message: ConversationMessage) {
        if let entry = localEntries[message.id] {
            if case .failed = message.delivery {
                // Refused before the server took it: the server kept nothing under its key.
                replaceRefused(entry, text: entry.text)
            } else {
                attempts[entry.id] = nil
                deliver(entry)
            }
            return
        }
        guard message.isConfirmed, message.isFromUser, case .failed = message.delivery else { return }
        work.start {
            do throws(ThreadDeskError) {
                let sent = try await self.client.edit(message.id, to: message.text)
                self.history.upsert(self.history.shown(sent))
            } catch {
                self.work.lastError = error
            }
        }
    }

    /// Changes the text of one of the user's messages (a failed one goes out again with it).
    func edit(_ message: ConversationMessage, to text: String) {
        guard message.isFromUser, !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return }
        if let entry = localEntries[message.id] {
            if case .failed = message.delivery {
                replaceRefused(entry, text: text)
            } else {
                // Its key may have reached the server with the old text: the new one follows as an
                // edit once the server confirms the message.
                pendingEdits[entry.id] = text
                history.timeline.updateLocal(id: entry.id) { $0.text = text }
            }
            return
        }
        work.start {
            do throws(ThreadDeskError) {
                let edited = try await self.client.edit(message.id, to: text)
                self.history.upsert(self.history.shown(edited))
            } catch {
                self.work.lastError = error
            }
        }
    }

    /// Deletes one of the user's messages; one not yet sent never reaches support.
    func delete(_ message: ConversationMessage) {
        guard message.isFromUser else { return }
        if localEntries[message.id] != nil {
            localEntries[message.id] = nil
            pendingEdits[message.id] = nil
            history.timeline.remove(id: message.id)
            if delivering.contains(message.id) { discarded.insert(message.id) }
            work.start { try? await self.client.discardPending(message.id) }
            return
        }
        work.start {
            do throws(ThreadDeskError) {
                try await self.client.delete(message.id)
                self.history.timeline.remove(id: message.id)
                self.history.saveSoon()
            } catch {
                self.work.lastError = error
            }
        }
    }

    /// Sends every message of the device that waits (shown or not), oldest first.
    func deliverWaiting() {
        for entry in localEntries.values.sorted(by: { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }) {
            if case .failed = history.timeline.message(id: entry.id)?.delivery { continue }
            deliver(entry)
        }
    }

    /// A message the server refused for good goes again as a new one (a new key), in its place.
    private func replaceRefused(_ entry: OutboxEntry, text: String) {
        let fresh = OutboxEntry(text: text, files: entry.files, suggestionID: entry.suggestionID)
        localEntries[entry.id] = nil
        history.timeline.remove(id: entry.id)
        send(fresh)
    }

    private func deliver(_ entry: OutboxEntry) {
        guard !delivering.contains(entry.id) else { return }
        delivering.insert(entry.id)
        work.start {
            defer { self.delivering.remove(entry.id) }
            do throws(ThreadDeskError) {
                let sent = try await self.client.send(entry)
                self.attempts[entry.id] = nil
                if self.discarded.remove(entry.id) != nil {
                    // Withdrawn while the server was taking it: withdrawn there too.
                    try? await self.client.delete(sent.id)
                    return
                }
                guard self.localEntries.removeValue(forKey: entry.id) != nil else { return }
                self.history.timeline.remove(id: entry.id)
                self.history.upsert(self.history.shown(sent))
                if let text = self.pendingEdits.removeValue(forKey: entry.id) {
                    self.edit(self.history.timeline.message(id: sent.id) ?? self.history.shown(sent), to: text)
                }
            } catch where error.kind == .pending {
                // Kept on the device: tried again after a while (and whenever the stream comes back).
                self.redeliverLater(entry)
            } catch {
                guard !Task.isCancelled else { return }
                // Refused for good before the server took it (too long, a file it does not take).
                self.history.timeline.updateLocal(id: entry.id) { $0.delivery = .failed(reason: error.description) }
            }
            self.history.saveSoon()
        }
    }

    private func redeliverLater(_ entry: OutboxEntry) {
        guard !Task.isCancelled, localEntries[entry.id] != nil else { return }
        let attempt = attempts[entry.id, default: 0]
        attempts[entry.id] = attempt + 1
        // 5 s, doubling to 2 min: the client's own retries came before each of these.
        let wait = Duration.seconds(min(120, 5 << min(attempt, 5)))
        work.start {
            do { try await self.sleep(wait) } catch { return }
            guard let entry = self.localEntries[entry.id] else { return }
            self.deliver(entry)
        }
    }
}
