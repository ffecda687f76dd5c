import DiscordREST

extension StatusTags {
    /// A thread's events and changes in this process: whether a change of ours is under way (and
    /// what the gateway said meanwhile), and how many events are being checked against its note.
    struct Watch {
        var heard: [Heard]?
        /// Events being checked against the note now, by number.
        var checking: [Int: Heard] = [:]
        var nextCheck = 0
        var isIdle: Bool { heard == nil && checking.isEmpty }

        /// Whether every event heard or being checked agrees with `note`.
        func agree(with note: ShownNote) -> Bool {
            ((heard ?? []) + checking.values).allSatisfy { $0.agrees(with: note) }
        }
    }

    /// What a THREAD_UPDATE said of a thread.
    struct Heard: Sendable {
        /// Nil when the event did not carry them (a daemon older than the field).
        var tags: [String]?
        var archived: Bool

        /// Whether the note says just this of the thread. A note that says nothing of the tags
        /// agrees only when it claims no status as surely shown either (else an agent's status
        /// set by hand would be taken as ours).
        func agrees(with note: ShownNote) -> Bool {
            guard let shows = note.shows else { return note.unsure || note.status == nil }
            guard let tags else { return false }
            return Set(tags) == Set(shows.tags) && archived == shows.archived
        }
    }

    /// The store's note of a thread: the status we last gave it, whether that may no longer be
    /// what it shows (`unsure`: the gateway said something else, or a change failed), and, as of
    /// a feed epoch, its tags and whether it is archived. Written as `needs-reply;3;0;111,222`,
    /// `~resolved` when unsure (`needs-reply` alone in notes from earlier versions, which say
    /// nothing of the tags).
    struct ShownNote: Sendable, Equatable {
        var status: ConversationStatus?
        var unsure = false
        var epoch: Int?
        var shows: (tags: [String], archived: Bool)?

        init(status: ConversationStatus?, unsure: Bool = false, epoch: Int?, shows: (tags: [String], archived: Bool)?) {
            (self.status, self.unsure, self.epoch, self.shows) = (status, unsure, epoch, shows)
        }

        init?(note: String) {
            let parts = note.split(separator: ";", omittingEmptySubsequences: false)
            guard var first = parts.first, parts.count == 1 || parts.count == 4 else { return nil }
            if first.hasPrefix("~") {
                unsure = true
                first = first.dropFirst()
            }
            if first.isEmpty { status = nil } else if let status = ConversationStatus(rawValue: String(first)) { self.status = status } else { return nil }
            guard parts.count == 4 else { return }
            epoch = Int(parts[1])
            let tags = parts[3].split(separator: ",").map(String.init)
            if epoch != nil, parts[2] == "0" || parts[2] == "1", tags.allSatisfy({ Snowflake($0) != nil }) {
                shows = (tags, parts[2] == "1")
            }
        }

        var note: String {
            let status = (unsure ? "~" : "") + (self.status?.rawValue ?? "")
            guard let shows, let epoch else { return status }
            return "\(status);\(epoch);\(shows.archived ? 1 : 0);\(shows.tags.joined(separator: ","))"
        }

        /// Says nothing more of what the thread shows: its tags are read before the next change,
        /// which is made even if it is to the status we last gave it.
        mutating func forgetShows() {
            shows = nil
            unsure = true
        }

        static func == (a: Self, b: Self) -> Bool {
            a.status == b.status && a.unsure == b.unsure && a.epoch == b.epoch && a.shows?.tags == b.shows?.tags
                && a.shows?.archived == b.shows?.archived
        }
    }
}
