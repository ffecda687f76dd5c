import Testing
import TestSupport
@testable import ThreadDeskStore

@Suite("The live bus")
struct LiveBusTests {
    /// A thousand wake-ups at once go out as a few NOTIFYs under PostgreSQL's 8,000 bytes, each
    /// announcement whole on its own line; one too long for any payload is left out.
    @Test func announcementsArePackedIntoFewPayloadsUnderTheLimit() {
        let announcements = (0..<1_000).map { #"{"origin":"abcd1234","user":"u_\#($0)"}"# }
        let payloads = PostgresStore.notifications(packing: announcements)
        #expect(payloads.count < 15)
        #expect(payloads.allSatisfy { $0.utf8.count <= PostgresStore.maximumAnnouncement })
        #expect(payloads.flatMap { $0.split(separator: "\n").map(String.init) } == announcements)

        let tooLong = String(repeating: "x", count: PostgresStore.maximumAnnouncement + 1)
        #expect(PostgresStore.notifications(packing: ["a", tooLong, "b"]) == ["a\nb"])
        #expect(PostgresStore.notifications(packing: []).isEmpty)
    }

    /// Another replica hears every announcement of a batch, each on its own.
    @Test(.enabled(if: postgresIsAvailable), .timeLimit(.minutes(1)))
    func anotherReplicaHearsEachAnnouncementOfABatch() async throws {
        try await withFreshPostgresSchema { url in
            try await PostgresStore.withRunning(url: url) { sender in
                try await PostgresStore.withRunning(url: url) { listener in
                    let heard = Locked<[String]>([])
                    let connected = Locked(false)
                    let listening = Task {
                        await listener.listen(
                            receive: { payload in heard.withLock { $0.append(payload) } },
                            connected: { connected.withLock { $0 = true } })
                    }
                    defer { listening.cancel() }
                    try await eventually("the listener connected") { connected.withLock { $0 } }

                    let announcements = (0..<1_000).map { #"{"origin":"abcd1234","user":"u_\#($0)"}"# }
                    try await sender.announce(announcements)
                    try await eventually("every announcement heard") { heard.withLock { $0.count } >= announcements.count }
                    #expect(heard.withLock { $0 } == announcements)
                }
            }
        }
    }
}
