import DiscordREST
import Foundation
import ThreadDeskCore

/// An answer the assistant drafted for an agent to approve, shown in the thread as a note with
/// buttons. Its `state` changes only by compare-and-set under the owner's lock, so two clicks,
/// two agents or two replicas cannot both send it.
public struct AssistDraft: Sendable, Hashable, Codable {
    public enum State: String, Sendable, Codable, CaseIterable {
        case drafting, posted, sending, sent, discarded, replaced, dropped, uncertain, failed

        /// Still waiting on an agent or on a delivery: what `openDrafts(thread:)` returns.
        public static let open: [State] = [.drafting, .posted, .sending, .uncertain]
        /// Done with: what `pruneDrafts(closedBefore:)` may delete once old.
        public static let closed: [State] = [.sent, .discarded, .replaced, .dropped, .failed]

        public var isOpen: Bool { Self.open.contains(self) }
    }

    public var id: Snowflake
    public var owner: UserID
    public var thread: Snowflake
    /// The newest user message it answers: a newer one replaces the draft.
    public var answers: Snowflake
    public var state: State
    public var text: String
    /// The FAQ entries the draft was written from.
    public var faqIDs: [String]
    /// The note showing it in the thread, once posted.
    public var noteID: Snowflake?
    /// The message it became, once sent.
    public var sentMessageID: Snowflake?
    /// Who last acted on it (an agent's Discord id), for the note and the audit trail.
    public var actor: String?
    /// The interaction that last moved it, so a redelivered click is recognized.
    public var interactionID: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: Snowflake, owner: UserID, thread: Snowflake, answers: Snowflake, state: State = .drafting, text: String = "",
        faqIDs: [String] = [], noteID: Snowflake? = nil, sentMessageID: Snowflake? = nil, actor: String? = nil,
        interactionID: String? = nil, createdAt: Date, updatedAt: Date? = nil
    ) {
        self.id = id
        self.owner = owner
        self.thread = thread
        self.answers = answers
        self.state = state
        self.text = text
        self.faqIDs = faqIDs
        self.noteID = noteID
        self.sentMessageID = sentMessageID
        self.actor = actor
        self.interactionID = interactionID
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
    }
}

/// Tokens spent on the assistant per key and UTC day, shared by every replica: the budgets.
public protocol AssistLedger: Sendable {
    /// Adds `tokens` to every key of `limits` for `day` only if each stays within its limit
    /// (0: none), in one step no other reservation interleaves with; false, nothing added,
    /// otherwise. Reserving before the call keeps concurrent calls from all passing the check.
    func reserveAssistTokens(_ tokens: Int, day: String, limits: [String: Int]) async throws -> Bool
    /// Settles a reservation once the provider said what it cost: adds `delta` (may be negative;
    /// floors at 0) to each key.
    func adjustAssistTokens(_ delta: Int, day: String, keys: [String]) async throws
    /// What `key` has spent on `day` (0 when nothing), for budgets shown and metrics.
    func assistTokensUsed(_ key: String, day: String) async throws -> Int
    /// Forgets the days before `day` (`yyyy-MM-dd`, so they sort as text); returns how many rows
    /// went. Old days no budget looks at would only grow the table.
    @discardableResult func pruneAssistUsage(before day: String) async throws -> Int
}

/// The keys the assistant's budgets are kept under, built in one place so that an erasure finds
/// the user's.
public enum AssistKey {
    public static func app(_ app: AppID) -> String { "app:\(app.rawValue)" }
    public static func user(_ id: UserID) -> String { "user:\(id.rawValue)" }
    /// A network's (an address or an IPv6 prefix, within its app), by a hash of it: the ledger
    /// keeps no address.
    public static func network(_ network: String) -> String { "net:" + UserToken.hash("assist-network:" + network).prefix(32) }
    /// What an app's users no agent has answered yet spent together.
    public static func newUsers(_ app: AppID) -> String { "new:\(app.rawValue)" }
}

/// The assistant's drafts, kept so that a click finds its draft on any replica, after a restart.
public protocol DraftStore: Sendable {
    /// The draft by its id, whatever its state (a late click needs to find a closed one).
    func draft(_ id: Snowflake) async throws -> AssistDraft?
    /// The thread's drafts still in play (drafting, posted, sending, uncertain), oldest first: a
    /// new user message replaces them, and a click on one a stop left sending warns before anything.
    func openDrafts(thread: Snowflake) async throws -> [AssistDraft]
    /// Every thread's drafts being sent (`sending`), least recently changed first, at most `limit`:
    /// at start, the sends a crash cut off are found and their notes warn.
    func draftsBeingSent(limit: Int) async throws -> [AssistDraft]
    /// Keeps the draft as given, replacing the one with its id. The caller holds the owner's lock
    /// (`withUser`), which is what makes its read-check-save a compare-and-set.
    func saveDraft(_ draft: AssistDraft) async throws
    /// Deletes closed drafts (sent, discarded, replaced, dropped, failed) last changed before
    /// `date`; returns how many went. The text came from a user's conversation: it is not kept
    /// longer than it serves.
    @discardableResult func pruneDrafts(closedBefore date: Date) async throws -> Int
}
