import Crypto
import Foundation
import ThreadDeskCore

/// The store's note that Discord may have a thread for a user the user's record does not name,
/// and which such threads may be adopted. Set for a reference-system id (whose thread ThreadDesk
/// never recorded) and before every attempt to make a thread (committed before Discord is
/// asked); removed once the record holding a thread is committed (`UserSerializer`).
public enum ThreadNotes {
    public static func unrecordedThreadKey(_ id: UserID) -> String { "unrecorded-thread/\(id.rawValue)" }

    static let legacyNote = "legacy id"
    static let verifiedLegacyNote = "legacy id, verified"
    static let attemptNotePrefix = "attempt at "

    static let starterSeparator = " starter "

    /// The note written before an attempt to make a thread, at `date`, whose starter post is
    /// `starter` (``starterDigest(content:fileCount:)``): threads are named for the
    /// conversation, so the note, not the name, says which thread an attempt made.
    public static func attemptNote(at date: Date, starter: String) -> String {
        attemptNotePrefix + ISO8601DateFormatter().string(from: date) + starterSeparator + starter
    }

    /// What identifies a thread's starter post as Discord keeps it: its text and its files' sizes
    /// (Discord may rename a file, never resize it).
    static func starterDigest(content: String, fileSizes: [Int]) -> String {
        let sizes = fileSizes.sorted().map(String.init).joined(separator: ",")
        let digest = SHA256.hash(data: Data("\(sizes)\u{0}\(content)".utf8))
        return String(digest.map { String(format: "%02x", $0) }.joined().prefix(32))
    }

    /// Which threads may be adopted: made after `madeAfter`, and either starting with the post
    /// an attempt noted (`starter`) or, for the reference system's ids and notes from before
    /// thread names changed, named for the user.
    struct Adoption: Equatable {
        var madeAfter: Date
        /// An attempt's thread is made within its request's time (and the clocks' skew).
        var madeBefore: Date = .distantFuture
        var starter: String?
    }

    /// How far before an attempt's note a thread it made may seem to have been made (Discord's
    /// clock against ours).
    static let clockSkew: TimeInterval = 300

    /// The note that lets the first send adopt a thread Discord has under `id`'s name, or nil when
    /// none may be adopted. Only the reference system's ids had threads ThreadDesk never recorded;
    /// there the id itself was the credential, so adopting by id alone is as strong as the legacy
    /// routes and ends with them (or needs the app backend's `userHash`).
    static func adoptionNote(for id: UserID, verified: Bool, legacyRoutes: Bool) -> String? {
        guard id.isLegacyShaped else { return nil }
        if verified { return verifiedLegacyNote }
        return legacyRoutes ? legacyNote : nil
    }

    /// Which threads the note allows adopting, or none (nil). An attempt of ours adopts only the
    /// thread it may have made, told by its starter post (notes from before that: by name); a
    /// reference-system id adopts its old thread by name only while the legacy routes are on
    /// (where the id alone was already the credential) or when the app backend vouched for it.
    static func adoption(_ note: String?, for id: UserID, legacyRoutes: Bool) -> Adoption? {
        guard let note else { return nil }
        if note.hasPrefix(attemptNotePrefix) {
            let fields = note.dropFirst(attemptNotePrefix.count).components(separatedBy: starterSeparator)
            guard let attempt = ISO8601DateFormatter().date(from: fields[0]) else { return nil }
            return Adoption(
                madeAfter: attempt.addingTimeInterval(-clockSkew), madeBefore: attempt.addingTimeInterval(clockSkew),
                starter: fields.count > 1 ? fields[1] : nil)
        }
        guard id.isLegacyShaped else { return nil }
        if note == verifiedLegacyNote { return Adoption(madeAfter: .distantPast) }
        // "legacy id", and what earlier versions wrote for legacy and client-chosen ids.
        return legacyRoutes ? Adoption(madeAfter: .distantPast) : nil
    }

    /// A Discord nonce (at most 25 characters) that is the same whenever the same post is retried.
    static func nonce(_ purpose: String, id: UserID, _ parts: String...) -> String {
        let digest = SHA256.hash(data: Data(([purpose, id.rawValue] + parts).joined(separator: "\u{0}").utf8))
        return String(digest.map { String(format: "%02x", $0) }.joined().prefix(25))
    }
}
