import Foundation
import Testing
@testable import ThreadDeskKit

/// Attributes and activity: checked on the device, kept there (across a restart) until a session
/// sends them, merged while they wait, refused items dropped, events under one id on every attempt.
@Suite("The user's context")
struct UserContextTests {
    static let trialEnds = Date(timeIntervalSince1970: 1_798_675_200)  // 2026-12-31T00:00:00Z

    /// A client of `server` (or of a closed port), with the session kept but not read yet.
    static func client(
        _ server: LocalHTTPServer?, store: any UserContextStore = InMemoryUserContextStore(), session: Bool = true,
        refusals: Locked<[UserContextRefusal]>? = nil
    ) async throws -> ThreadDeskClient {
        var configuration = ThreadDeskConfiguration(
            serverURL: server?.url ?? URL(string: "http://127.0.0.1:9")!, appKey: "key", sessionStore: InMemorySessionStore(),
            outbox: InMemoryOutbox(), userContext: store)
        configuration.sendAttempts = 1
        configuration.requestTimeout = 10
        // A call's retries (the help center's reads make three) wait a millisecond, not seconds.
        configuration.retryBackoff = Backoff(base: 0.001, cap: 0.001)
        if let refusals { configuration.userContextRefused = { refusal in refusals.withLock { $0.append(refusal) } } }
        if session { try await configuration.sessionStore.save(Session(userId: "app/u1", token: "token-1")) }
        return ThreadDeskClient(configuration)
    }

    static func kept(_ attributes: String) -> LocalHTTPServer.Answer {
        .init(status: 200, body: #"{"attributes":\#(attributes),"updatedAt":"2026-12-07T10:00:00Z"}"#)
    }

    static func recorded(_ id: String, status: Int = 201) -> LocalHTTPServer.Answer {
        .init(status: status, body: #"{"id":"\#(id)","name":"export_failed","occurredAt":"2026-12-07T10:00:00Z"}"#)
    }

    static func body<T: Decodable>(_ type: T.Type, _ request: LocalHTTPServer.Request?) throws -> T {
        try JSONDecoder().decode(T.self, from: try #require(request).body)
    }

    // MARK: Checked on the device

    @Test func aCallThatBreaksARuleThrowsNamingTheKeyAndKeepsNothing() async throws {
        let client = try await Self.client(nil)
        let bad: [[String: (any AttributeValueConvertible)?]] = [
            ["plan": "pro", "Plan": "pro"], ["bio": String(repeating: "a", count: 257)], ["score": Double.nan],
            [String(repeating: "k", count: 41): 1], ["when": AttributeValue.date("yesterday")], ["note": "two\nlines"],
            ["bell": "\u{7}"],
        ]
        for attributes in bad {
            let error = await #expect(throws: ThreadDeskError.self) { try await client.setAttributes(attributes) }
            #expect(error?.kind == .invalidInput && error?.code == .invalidAttributes)
        }
        let named = await #expect(throws: ThreadDeskError.self) { try await client.setAttributes(["ok": 1, "Plan": "pro"]) }
        #expect(named?.message.hasPrefix("Plan:") == true)
        // 50 keys at most, counting those waiting.
        var fifty: [String: (any AttributeValueConvertible)?] = [:]
        for index in 0..<50 { fifty["k\(index)"] = index }
        try await client.setAttributes(fifty)
        await #expect(throws: ThreadDeskError.self) { try await client.setAttributes(["k50": 50]) }
        // Nor more changes than one update holds.
        await #expect(throws: ThreadDeskError.self) { try await client.setAttributes(["k0": nil, "k50": 50]) }
        try await client.setAttributes(["k0": nil])

        for (name, properties) in [("Export", [:]), ("", [:]), ("a b", [:]), ("ok", ["Bad": 1])] as [(String, [String: any AttributeValueConvertible])] {
            let error = await #expect(throws: ThreadDeskError.self) { try await client.track(name, properties: properties) }
            #expect(error?.code == .invalidActivity)
        }
        var eleven: [String: any AttributeValueConvertible] = [:]
        for index in 0..<11 { eleven["p\(index)"] = index }
        await #expect(throws: ThreadDeskError.self) { try await client.track("export_failed", properties: eleven) }
        let pending = try await client.pendingUserContext()
        #expect(pending.activity.isEmpty)
        #expect(pending.attributes.count == 50 && pending.attributes["k0"] == .some(nil) && pending.attributes["ok"] == nil)
    }

    // MARK: Sent with the session

    @Test func attributesSetOfflineAreMergedAndSentOnceASessionOpens() async throws {
        let server = try LocalHTTPServer(answers: [
            .init(status: 200, body: #"{"userId":"app/u2","token":"token-2"}"#),
            Self.kept(#"{"plan":"pro","seats":3,"trial_ends":{"date":"2026-12-31T00:00:00Z"}}"#),
        ])
        defer { server.stop() }
        let client = try await Self.client(server, session: false)
        try await client.setAttributes(["plan": "free", "seats": 3, "coupon": "XMAS"])
        try await client.setAttributes(["plan": "pro", "trial_ends": Self.trialEnds, "coupon": nil])
        #expect(await client.sendUserContext().failure?.kind == .noSession)
        #expect(server.requests.current.isEmpty, "nothing goes before a session")

        try await client.open()
        await client.sendUserContext()
        let requests = server.requests.current
        #expect(requests.map { "\($0.method) \($0.path)" } == ["POST /v1/session", "PUT /v1/attributes"])
        #expect(requests.last?.headers["authorization"] == "Bearer token-2")
        let sent = try Self.body(AttributesUpdate.self, requests.last)
        let expected: [String: AttributeValue?] = [
            "plan": .string("pro"), "seats": .integer(3), "trial_ends": .date("2026-12-31T00:00:00Z"), "coupon": nil,
        ]
        #expect(sent.attributes == expected)
        #expect(try await client.pendingUserContext().isEmpty)
    }

    @Test func anAttributeTheServerRefusesIsDroppedAndTheRestGoesOn() async throws {
        let server = try LocalHTTPServer(answers: [
            .init(status: 400, body: #"{"error":{"code":"invalid_attributes","message":"seats: a number is not what this is."}}"#),
            Self.kept(#"{"is":1,"plan":"pro"}"#),
        ])
        defer { server.stop() }
        let refusals = Locked<[UserContextRefusal]>([])
        let client = try await Self.client(server, refusals: refusals)
        try await client.setAttributes(["plan": "pro", "seats": 3])
        try await client.setAttributes(["is": 1])
        let report = await client.sendUserContext()
        #expect(report.refused.map(\.item) == [.attributes(["seats"])], "the key the message starts with, not a word of it")
        #expect(report.refused.first?.error.code == .invalidAttributes)
        #expect(refusals.current.map(\.item) == [.attributes(["seats"])])
        #expect(report.attributes?.attributes == ["is": .integer(1), "plan": .string("pro")] && report.failure == nil)
        let bodies = try server.requests.current.map { try Self.body(AttributesUpdate.self, $0).attributes }
        #expect(bodies == [["is": .integer(1), "plan": .string("pro"), "seats": .integer(3)], ["is": .integer(1), "plan": .string("pro")]])
        #expect(try await client.pendingUserContext().isEmpty)
    }

    @Test func aValueSetAgainWhileTheFirstWasOnItsWayGoesNext() async throws {
        let hold = LocalHTTPServer.Hold()
        let server = try LocalHTTPServer(answers: [Self.kept(#"{"plan":"free"}"#).held(hold), Self.kept(#"{"plan":"pro"}"#)])
        defer { server.stop() }
        let client = try await Self.client(server)
        try await client.setAttributes(["plan": "free"])
        let first = Task { await client.sendUserContext() }
        try await until { hold.hasArrived }
        try await client.setAttributes(["plan": "pro"])
        hold.release()
        let report = await first.value
        #expect(report.attributes?.attributes == ["plan": .string("pro")])
        let bodies = try server.requests.current.map { try Self.body(AttributesUpdate.self, $0).attributes }
        #expect(bodies == [["plan": .string("free")], ["plan": .string("pro")]])
    }

    @Test func whatWaitsSurvivesARestartAndGoesUnderTheSameIDs() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("td-context-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = FileUserContextStore(url: folder.appendingPathComponent("user-context.json"))
        // Offline: the closed port answers nothing.
        let offline = try await Self.client(nil, store: store)
        try await offline.setAttributes(["plan": "pro", "coupon": nil])
        let event = try await offline.track("export_failed", properties: ["format": "pdf", "pages": 12], at: Self.trialEnds)
        #expect(await offline.sendUserContext().failure?.kind == .transport)
        let before = try await offline.pendingUserContext()

        // The app is killed and launched again, now online.
        let server = try LocalHTTPServer(answers: [Self.kept(#"{"plan":"pro"}"#), Self.recorded(event.id)])
        defer { server.stop() }
        let relaunched = try await Self.client(server, store: FileUserContextStore(url: store.url))
        #expect(try await relaunched.pendingUserContext() == before)
        let report = await relaunched.sendUserContext()
        #expect(report.recorded.map(\.id) == [event.id] && report.failure == nil)
        let requests = server.requests.current
        #expect(requests.map { "\($0.method) \($0.path)" } == ["PUT /v1/attributes", "POST /v1/activity"])
        let attributes: [String: AttributeValue?] = ["plan": .string("pro"), "coupon": nil]
        #expect(try Self.body(AttributesUpdate.self, requests.first).attributes == attributes)
        let sent = try Self.body(ActivityEvent.self, requests.last)
        #expect(sent == ActivityEvent(
            id: event.id, name: "export_failed", properties: ["format": .string("pdf"), "pages": .integer(12)],
            occurredAt: "2026-12-31T00:00:00Z"))
        #expect(try await relaunched.pendingUserContext().isEmpty)
        #expect(try store.load()?.isEmpty == true, "nothing left to send on the disk")
    }

    @Test func anEventKeepsItsIDOnEveryAttemptAndARefusedOneIsDropped() async throws {
        let server = try LocalHTTPServer(answers: [
            .init(status: 503, headers: ["Retry-After": "0"], body: #"{"error":{"code":"unavailable","message":"later"}}"#),
            Self.recorded("x", status: 200),
            .init(status: 400, body: #"{"error":{"code":"invalid_activity","message":"name: refused"}}"#),
        ])
        defer { server.stop() }
        let client = try await Self.client(server)
        let event = try await client.track("export_failed")
        #expect(await client.sendUserContext().failure?.status == 503)
        #expect(try await client.pendingUserContext().activity == [event])
        #expect(await client.sendUserContext().recorded.count == 1)
        let ids = try server.requests.current.map { try Self.body(ActivityEvent.self, $0).id }
        #expect(ids == [event.id, event.id])

        let refused = try await client.track("checkout.started")
        let report = await client.sendUserContext()
        #expect(report.refused.map(\.item) == [.activity(refused)] && report.failure == nil)
        #expect(try await client.pendingUserContext().isEmpty)
    }

    @Test func theNewestFiftyUnsentEventsWait() async throws {
        let client = try await Self.client(nil, session: false)
        var events: [ActivityEvent] = []
        for index in 0..<52 { events.append(try await client.track("step_\(index)")) }
        let pending = try await client.pendingUserContext().activity
        #expect(pending == Array(events.suffix(50)))
        #expect(Set(events.map(\.id)).count == 52)
    }

    @Test func signingOutForgetsWhatWaits() async throws {
        let server = try LocalHTTPServer(answers: [.init(status: 204, body: "")])
        defer { server.stop() }
        let store = InMemoryUserContextStore()
        let client = try await Self.client(server, store: store)
        try await client.setAttributes(["plan": "pro"])
        try await client.track("export_failed")
        try await client.signOut()
        #expect(try await client.pendingUserContext().isEmpty)
        #expect(store.load() == nil)
    }

    @Test func aDateIsSentAsTheWiresDateObject() throws {
        let json = try JSONEncoder().encode(AttributesUpdate(attributes: ["trial_ends": Self.trialEnds.attributeValue]))
        #expect(String(decoding: json, as: UTF8.self) == #"{"attributes":{"trial_ends":{"date":"2026-12-31T00:00:00Z"}}}"#)
    }
}

extension LocalHTTPServer.Answer {
    func held(_ hold: LocalHTTPServer.Hold) -> Self {
        var answer = self
        answer.hold = hold
        return answer
    }
}

/// Waits (10 s at most) for `condition`, which another thread or task makes true (the local
/// server's, the client's).
func until(_ condition: @Sendable () async -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("the condition did not hold within 10 s")
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}
