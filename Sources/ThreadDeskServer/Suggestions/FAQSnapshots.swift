import Deadlines
import Foundation
import Logging
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

/// The FAQ book kept in the store: restored as the server starts, so it suggests at once while it
/// reads the forum again; written after each read and each change, by one loop, the latest only
/// (a write never overtakes a newer one).
struct FAQSnapshots: Sendable {
    let store: any GlobalValues
    let book: FAQBook
    let forumID: String
    /// The app whose book it is.
    let app: AppID
    let work: BackgroundWork
    let logger: Logger
    /// Wakes the loop that writes the book's snapshot.
    let wanted = WakeSignal()
    let requests = SnapshotRequests()
    /// The store's key of the book's snapshot: the key from before there were several apps for
    /// the default app's, the app's own for another's.
    var key: String { app == .default ? "faq-snapshot" : "faq-snapshot/\(app)" }
    /// The name of its work for `BackgroundWork` (each app's its own).
    var workName: String { app == .default ? "FAQ snapshot" : "FAQ snapshot \(app)" }

    /// The snapshot the store keeps into the book, when it is this forum's.
    func restore() async {
        do {
            guard let text = try await store.globalValue(key) else { return }
            let snapshot = try JSONDecoder().decode(FAQBook.Snapshot.self, from: Data(text.utf8))
            guard snapshot.forum == forumID, await book.restore(snapshot) else { return }
            let answers = await book.count
            logger.info("Curated answers restored from the store; reading the FAQ forum again", metadata: ["answers": "\(answers)"])
        } catch {
            logger.notice("Could not restore the curated answers from the store; reading the FAQ forum", metadata: ["error": "\(error)"])
        }
    }

    /// Asks for the book's snapshot to be kept (by `run`, which writes the latest).
    func keep() {
        work.begin(workName)
        requests.add()
        wanted.signal()
    }

    /// Writes the book as it is when woken, one write at a time: a write never overtakes a newer one.
    func run() async {
        while await wanted.wait() {
            let taken = requests.take()
            guard taken > 0 else { continue }
            do {
                let data = try JSONEncoder().encode(await book.snapshot(forum: forumID))
                try await store.setGlobalValue(key, to: String(decoding: data, as: UTF8.self))
            } catch {
                logger.notice("Could not keep the curated answers in the store", metadata: ["error": "\(error)"])
            }
            work.end(workName, count: taken)
        }
    }
}

/// Snapshot writes asked for and not yet written.
final class SnapshotRequests: Sendable {
    private let count = Mutex(0)

    func add() { count.withLock { $0 += 1 } }

    /// The requests so far, now answered.
    func take() -> Int {
        count.withLock { count in
            defer { count = 0 }
            return count
        }
    }
}
