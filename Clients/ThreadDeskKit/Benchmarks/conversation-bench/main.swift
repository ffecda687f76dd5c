import Foundation
import ThreadDeskKit

/// `conversation-bench`: what one live event and one page merge cost a `SupportConversation` of
/// 1,000 / 10,000 / 100,000 messages, on the main actor as an app runs it. Plain Swift, timed
/// with `ContinuousClock` one operation at a time; prints p50 / p99 / max / mean in µs per
/// operation. `bench/conversation.sh` builds it in release and runs it. No server is contacted:
/// `apply` only touches the network for `.reset` and `.connection(.live)`, which are not used.
///
///     conversation-bench [iterations]   (default 20000 per event row, a tenth of that per merge row)
@main
struct ConversationBench {
    @MainActor
    static func main() async {
        let iterations = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 20_000
        if #available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *) {
            var bench = Bench(iterations: iterations)
            bench.run()
        } else {
            print("SupportConversation needs macOS 14 / iOS 17")
        }
    }
}

// MARK: Measuring

struct Row {
    var name: String
    var size: Int
    var samples: [Duration]

    static func microseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1e6 + Double(attoseconds) / 1e12
    }

    var line: String {
        let sorted = samples.map(Self.microseconds).sorted()
        func quantile(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count) * q).rounded(.up)) - 1)] }
        let mean = sorted.reduce(0, +) / Double(sorted.count)
        let worst = sorted.last!
        let verdict = worst <= 1000 ? "yes" : (quantile(0.99) <= 1000 ? "p99 yes, max no" : "NO")
        return "| \(name) | \(size.formatted()) | \(sorted.count.formatted()) | \(f(quantile(0.5))) | \(f(quantile(0.99))) | \(f(worst)) | \(f(mean)) | \(verdict) |"
    }

    func f(_ value: Double) -> String {
        value >= 100 ? String(format: "%.0f", value) : value >= 10 ? String(format: "%.1f", value) : String(format: "%.2f", value)
    }
}

/// Keeps results alive so nothing measured is optimized away; printed at the end.
@MainActor var checksum = 0

@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
struct Bench {
    let iterations: Int
    let clock = ContinuousClock()
    let server = URL(string: "https://support.example.com")!
    var rows: [Row] = []

    init(iterations: Int) { self.iterations = iterations }

    // MARK: Messages

    /// Snowflake-like ids of one length (19 digits), so their order is their string order:
    /// message `i` of a conversation has `base + i * 1000`, which leaves room between them.
    static let base = 1_300_000_000_000_000_000
    static func id(_ key: Int) -> String { String(base + key) }

    /// As the server writes them: `2023-11-14T22:13:20.000Z`.
    nonisolated(unsafe) static let stamps: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()

    static let texts = [
        "Hi! The app crashes when I open the settings screen after the last update.",
        "Thanks for reaching out. Which version of the app and of iOS are you on?",
        "Version 4.2.1 on iOS 18.1, iPhone 15.",
        "Got it, we can reproduce it. A fix is on its way in 4.2.2; meanwhile restarting the app helps.",
    ]

    /// A message as the server sends it (`message.created` / a page): text, every 20th with an image.
    static func message(key: Int, edited: Int? = nil) -> SupportMessage {
        let stamp = stamps.string(from: Date(timeIntervalSince1970: 1_700_000_000 + Double(key) / 1000 * 7.3))
        let fromUser = (key / 1000 + key % 1000) % 2 == 0
        var attachments: [SupportMessage.Attachment] = []
        if (key / 1000) % 20 == 7 {
            attachments.append(
                .init(
                    id: id(key + 1), filename: "screenshot.png", size: 182_344, contentType: "image/png",
                    url: "/v1/attachments/\(id(key + 1))", width: 1179, height: 2556))
        }
        return SupportMessage(
            id: id(key), author: fromUser ? .user : .support, authorName: fromUser ? nil : "Alex from Support",
            content: edited.map { "\(texts[abs(key / 1000) % texts.count]) (edit \($0))" } ?? texts[abs(key / 1000) % texts.count],
            attachments: attachments, createdAt: stamp, editedAt: edited.map { _ in stamp })
    }

    static func created(_ key: Int) -> LiveUpdate { LiveUpdate(event: .messageCreated(message(key: key)), position: "1-\(key)") }

    func client() -> ThreadDeskClient {
        ThreadDeskClient(
            ThreadDeskConfiguration(
                serverURL: server, appKey: "bench", sessionStore: InMemorySessionStore(), outbox: InMemoryOutbox()))
    }

    /// A conversation holding messages `0..<size` (filled by `message.created` in order, each timed).
    func conversation(size: Int) -> (SupportConversation, [Duration]) {
        let conversation = SupportConversation(client: client(), store: nil)
        let updates = (0..<size).map { Self.created($0 * 1000) }
        var samples: [Duration] = []
        samples.reserveCapacity(size)
        for update in updates {
            let start = clock.now
            conversation.apply(update)
            samples.append(start.duration(to: clock.now))
        }
        precondition(conversation.messages.count == size)
        return (conversation, samples)
    }

    /// The SDK's own form of server messages (its converting initializer is internal): through a
    /// scratch conversation.
    func shown(_ messages: [SupportMessage]) -> [ConversationMessage] {
        let scratch = SupportConversation(client: client(), store: nil)
        for message in messages { scratch.apply(LiveUpdate(event: .messageCreated(message), position: nil)) }
        return scratch.messages
    }

    // MARK: Running

    mutating func run() {
        print("conversation-bench: \(iterations) iterations per event row (after \(iterations / 10) warm-up), \(ProcessInfo.processInfo.activeProcessorCount) cores")
        events(size: 10_000, all: true)
        merges(size: 10_000)
        events(size: 1_000, all: false)
        events(size: 100_000, all: false)
        print("")
        print("| operation | messages held | samples | p50 µs | p99 µs | max µs | mean µs | ≤ 1 ms |")
        print("|---|---|---|---|---|---|---|---|")
        for row in rows { print(row.line) }
        print("")
        print("checksum \(checksum)")
    }

    /// Times `operation` `iterations` times after a tenth as many untimed, with `reset` (untimed)
    /// after each.
    mutating func measure(
        _ name: String, size: Int, count: Int? = nil, _ operation: (Int) -> Void, reset: (Int) -> Void = { _ in }
    ) {
        let count = count ?? iterations
        let warmUp = max(1, count / 10)
        var samples: [Duration] = []
        samples.reserveCapacity(count)
        for iteration in 0..<(warmUp + count) {
            let start = clock.now
            operation(iteration)
            let took = start.duration(to: clock.now)
            if iteration >= warmUp { samples.append(took) }
            reset(iteration)
        }
        rows.append(Row(name: name, size: size, samples: samples))
    }

    mutating func events(size: Int, all: Bool) {
        let (conversation, fill) = conversation(size: size)
        if all { rows.append(Row(name: "fill: `message.created` in order, 0 → \(size.formatted()) (array growth included)", size: size, samples: fill)) }
        let newest = size * 1000
        var random = SystemRandomNumberGenerator()

        // (a) A new newest message: the common case. Removed (untimed) after, so the size stays.
        let fresh = (0..<(iterations + iterations / 10)).map { Self.created(newest + $0) }
        measure("(a) `message.created`, new newest", size: size) { conversation.apply(fresh[$0]) } reset: {
            conversation.apply(LiveUpdate(event: .messageDeleted(id: Self.id(newest + $0)), position: nil))
        }
        checksum &+= conversation.messages.count
        guard all else { return }

        // (b) An id between two held messages, somewhere in the middle half (out of order).
        let middle = (0..<(iterations + iterations / 10)).map { _ in Self.created(Int.random(in: size / 4..<size * 3 / 4, using: &random) * 1000 + 500) }
        measure("(b) `message.created`, out of order (middle)", size: size) { conversation.apply(middle[$0]) } reset: {
            if case .messageCreated(let message) = middle[$0].event {
                conversation.apply(LiveUpdate(event: .messageDeleted(id: message.id), position: nil))
            }
        }
        // The worst place for an insert: before everything (the whole array moves).
        let oldest = (0..<(iterations + iterations / 10)).map { Self.created(-1000 - $0) }
        measure("(b′) `message.created`, out of order (oldest position)", size: size) { conversation.apply(oldest[$0]) } reset: {
            conversation.apply(LiveUpdate(event: .messageDeleted(id: Self.id(-1000 - $0)), position: nil))
        }
        checksum &+= conversation.messages.count

        // (c) An edit of a held message in the middle half.
        let edits = (0..<(iterations + iterations / 10)).map {
            LiveUpdate(event: .messageUpdated(Self.message(key: Int.random(in: size / 4..<size * 3 / 4, using: &random) * 1000, edited: $0)), position: "e")
        }
        measure("(c) `message.updated`, middle", size: size) { conversation.apply(edits[$0]) }
        checksum &+= conversation.messages.filter(\.isEdited).count

        // (d) A deletion in the middle half; the message comes back (untimed) after.
        let victims = (0..<(iterations + iterations / 10)).map { _ in Int.random(in: size / 4..<size * 3 / 4, using: &random) * 1000 }
        let deletions = victims.map { LiveUpdate(event: .messageDeleted(id: Self.id($0)), position: "d") }
        let restores = victims.map { Self.created($0) }
        measure("(d) `message.deleted`, middle", size: size) { conversation.apply(deletions[$0]) } reset: { conversation.apply(restores[$0]) }
        precondition(conversation.messages.count == size)

        // (e) The unread count (changes every time).
        let unread = (0..<(iterations + iterations / 10)).map { LiveUpdate(event: .unread(count: 1 + $0 % 2), position: "u") }
        measure("(e) `unread`", size: size) { conversation.apply(unread[$0]) }
        checksum &+= conversation.unreadCount

        // Apart, for where (a)'s time goes: the timeline's own upsert of a message already
        // converted (no conversion, no observation), on a timeline of its own.
        var timeline = ConversationTimeline(conversation.messages)
        let converted = shown(fresh.map { update -> SupportMessage in
            guard case .messageCreated(let message) = update.event else { fatalError() }
            return message
        })
        measure("  (a) without the conversation: `ConversationTimeline.upsert` of a converted message", size: size) {
            checksum &+= timeline.upsert(converted[$0]) ? 1 : 0
        } reset: { timeline.remove(id: converted[$0].id) }
        checksum &+= timeline.messages.count
    }

    mutating func merges(size: Int) {
        let count = max(100, iterations / 10)
        // The timeline a `SupportConversation` holds, as its own value (so a merge never copies
        // it for sharing).
        let held = shown((0..<size).map { Self.message(key: $0 * 1000) })
        var timeline = ConversationTimeline()
        let start = clock.now
        timeline.merge(held)
        let initial = start.duration(to: clock.now)
        rows.append(Row(name: "(f) `merge` of the whole conversation into an empty timeline (one sample)", size: size, samples: [initial]))

        // loadEarlier: 50 older than everything; dropped (untimed) after, giving a timeline of `size` again.
        let earlier = shown((1...50).map { Self.message(key: -$0 * 1000) })
        measure("(f) `merge`, 50-message page older than everything (loadEarlier)", size: size, count: count) { _ in
            timeline.merge(earlier)
        } reset: { _ in timeline = timeline.keepingNewest(size) }
        checksum &+= timeline.messages.count

        // Sync after reconnect: 100 messages, the newest 50 held (unchanged) and 50 new.
        let sync = shown((size - 50..<size + 50).map { Self.message(key: $0 * 1000) })
        let syncNew = sync.suffix(50).map(\.id)
        measure("(f) `merge`, 100-message page overlapping the newest (50 held + 50 new)", size: size, count: count) { _ in
            timeline.merge(sync)
        } reset: { _ in for id in syncNew { timeline.remove(id: id) } }
        checksum &+= timeline.messages.count

        // The same page when a message missed while away falls among the held 50: the one-pass
        // rebuild of the whole array.
        let gap = shown((size - 50..<size + 50).map { Self.message(key: $0 * 1000) } + [Self.message(key: (size - 25) * 1000 + 500)])
        let gapNew = syncNew + [Self.id((size - 25) * 1000 + 500)]
        measure("(f) `merge`, 100-message page overlapping the newest, one new among the held", size: size, count: count) { _ in
            timeline.merge(gap)
        } reset: { _ in for id in gapNew { timeline.remove(id: id) } }
        checksum &+= timeline.messages.count
        precondition(timeline.messages.count == size)
    }
}
