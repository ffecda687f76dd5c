import Crypto
import Foundation
import ThreadDeskCore

/// The store's note that Discord may have a thread for a user the user's record does not name,
/// and which such threads may be adopted. Set for a reference-system id (whose thread ThreadDesk
/// never recorded) and before every attempt to make a thread (committed before Discord is
/// asked); removed once the record holding a thread is committed (`UserLock`).
public enum ThreadNotes {
    public static func unrecordedThreadKey(_ id: UserID) -> String { "unrecorded-thread/\(id.rawValue)" }

    static let legacyNote = "legacy id"
    static let verifiedLegacyNote = "legacy id, verified"
    static let attemptNotePrefix = "attempt at "

    /// The note written before an attempt to make a thread, at `date`.
    public static func attemptNote(at date: Date) -> String { attemptNotePrefix + ISO8601DateFormatter().string(from: date) }

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

    /// Which threads named for `id` the note allows adopting: those made after the returned date
    /// (`.distantPast`: any), or none (nil). An attempt of ours adopts only what it may have made;
    /// a reference-system id adopts its old thread only while the legacy routes are on (where the
    /// id alone was already the credential) or when the app backend vouched for it.
    static func adoptionWindow(_ note: String?, for id: UserID, legacyRoutes: Bool) -> Date? {
        guard let note else { return nil }
        if note.hasPrefix(attemptNotePrefix) {
            guard let attempt = ISO8601DateFormatter().date(from: String(note.dropFirst(attemptNotePrefix.count))) else { return nil }
            return attempt.addingTimeInterval(-clockSkew)
        }
        guard id.isLegacyShaped else { return nil }
        if note == verifiedLegacyNote { return .distantPast }
        // "legacy id", and what earlier versions wrote for legacy and client-chosen ids.
        return legacyRoutes ? .distantPast : nil
    }

    /// A Discord nonce (at most 25 characters) that is the same whenever the same post is retried.
    static func nonce(_ purpose: String, id: UserID, _ parts: String...) -> String {
        let digest = SHA256.hash(data: Data(([purpose, id.rawValue] + parts).joined(separator: "\u{0}").utf8))
        return String(digest.map { String(format: "%02x", $0) }.joined().prefix(25))
    }
}
