import Foundation
import Observation
import Testing
@testable import ThreadDeskKit

/// Ratings against a real HTTP server: the request as a page and the stream bring it, the rating
/// as `POST /v1/rating` documents it (body, one key per request), the answers that end the
/// request, what is refused before anything is sent, and the push that asks for one.
@Suite("Ratings")
@MainActor
struct RatingTests {
    static let request = RatingRequest(conversationId: "1311000000000000001", requestedAt: "2026-12-07T10:00:00Z")
    static let requestJSON = #"{"conversationId":"1311000000000000001","requestedAt":"2026-12-07T10:00:00Z"}"#

    static func conversation(_ server: LocalHTTPServer) async throws -> SupportConversation {
        SupportConversation(client: try await CrashReportUploadTests.client(server), store: nil, options: .init(), clock: ContinuousClock())
    }

    static func page(rating: Bool) -> LocalHTTPServer.Answer {
        .init(status: 200, body: #"{"messages":[],"hasMore":false\#(rating ? #","ratingRequest":\#(requestJSON)"# : "")}"#)
    }

    static let supportStatus = LocalHTTPServer.Answer(status: 200, body: #"{"status":"open"}"#)

    static func rated(_ status: Int = 201, score: Int = 4, comment: String? = nil) -> LocalHTTPServer.Answer {
        let comment = comment.map { #""comment":"\#($0)","# } ?? ""
        return .init(
            status: status,
            body: #"{"rating":{"conversationId":"1311000000000000001","score":\#(score),\#(comment)"submittedAt":"2026-12-07T10:05:00Z"}}"#)
    }

    static func refused(_ status: Int, _ code: String) -> LocalHTTPServer.Answer {
        .init(status: status, body: #"{"error":{"code":"\#(code)","message":"refused"}}"#)
    }

    static func requested(_ request: RatingRequest = request) -> LiveUpdate {
        LiveUpdate(event: .ratingRequested(request), position: "r\(request.conversationId)")
    }

    /// Whether reading `read` in `withObservationTracking` is told of `change`.
    static func observes(_ read: @escaping @MainActor () -> Void, _ change: () async throws -> Void) async rethrows -> Bool {
        let told = Flag()
        withObservationTracking { read() } onChange: { told.set() }
        try await change()
        return told.isSet
    }

    // MARK: The request

    @Test func aRatingPushIsFetchedAsAPagesRequestAndAPageWithoutOneClearsIt() async throws {
        let server = try LocalHTTPServer(answers: [Self.page(rating: true), Self.supportStatus, Self.page(rating: false), Self.supportStatus])
        defer { server.stop() }
        let conversation = try await Self.conversation(server)
        let push = try #require(SupportRatingPush(userInfo: [
            PushPayload.ratingConversationID: "1311000000000000001", "aps": ["alert": ["title": "How did we do?"], "thread-id": "u1"] as [String: Any],
        ]))
        #expect(await Self.observes({ _ = conversation.ratingRequest }) { await conversation.receive(push) })
        #expect(conversation.ratingRequest == Self.request)
        #expect(server.requests.current.map(\.path) == ["/v1/messages?limit=50", "/v1/support-status"])
        // The same request again: it is here already, nothing is fetched.
        await conversation.receive(push)
        #expect(server.requests.current.count == 2)
        // Rated on the user's other device: the next page says nothing waits.
        await conversation.receive(SupportPush(messageID: "1311000000000000002", userID: "u1"))
        #expect(conversation.ratingRequest == nil)
        #expect(server.requests.current.count == 4)
        await conversation.stop()
    }

    @Test func theStreamsEventShowsTheRequestAndAPageAskedForBeforeItDoesNotClearIt() async throws {
        let server = try LocalHTTPServer(answers: [])
        defer { server.stop() }
        let conversation = try await Self.conversation(server)
        #expect(await Self.observes({ _ = conversation.ratingRequest }) { conversation.apply(Self.requested()) })
        #expect(conversation.ratingRequest == Self.request)
        // A page that left the server before the event, arriving after it, says nothing of it.
        let rating = ConversationRating(client: conversation.client)
        let mark = rating.announced
        rating.requested(Self.request)
        rating.page(nil, askedAt: mark)
        #expect(rating.request == Self.request)
        // One asked for after it does: nothing waits any more.
        rating.page(nil, askedAt: rating.announced)
        #expect(rating.request == nil)
        await conversation.stop()
    }

    @Test func aRatingRequestArrivesOnTheEventStreamOverHTTP() async throws {
        let stream = "id: 41\nevent: rating.requested\ndata: \(Self.requestJSON)\n\n"
        let server = try LocalHTTPServer(answers: [.init(status: 200, headers: ["Content-Type": "text/event-stream"], body: stream)])
        defer { server.stop() }
        let client = try await CrashReportUploadTests.client(server)
        let updates = client.updates()
        // The first rating event, or nil after 10 s.
        let update = await withTaskGroup(of: LiveUpdate?.self) { group in
            group.addTask {
                for await update in updates { if case .ratingRequested = update.event { return update } }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(10))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        #expect(update == LiveUpdate(event: .ratingRequested(Self.request), position: "41"))
        #expect(server.requests.current.first?.path == "/v1/events")
    }

    // MARK: Rating

    @Test func rateSendsTheScoreAndTrimmedCommentUnderAKeyAndClearsTheRequest() async throws {
        let server = try LocalHTTPServer(answers: [Self.rated(score: 4, comment: "Quick and kind")])
        defer { server.stop() }
        let conversation = try await Self.conversation(server)
        conversation.apply(Self.requested())
        #expect(try await Self.observes({ _ = conversation.ratingRequest }) {
            try await conversation.rate(score: 4, comment: "  Quick and kind\n")
        })
        #expect(conversation.ratingRequest == nil && !conversation.isRating)
        let request = try #require(server.requests.current.first)
        #expect(request.method == "POST" && request.path == "/v1/rating")
        #expect(request.headers["authorization"] == "Bearer token-1")
        #expect(request.headers["content-type"] == "application/json")
        #expect(try JSONDecoder().decode(RatingSubmission.self, from: request.body) == RatingSubmission(score: 4, comment: "Quick and kind"))
        let key = try #require(request.headers["idempotency-key"])
        #expect(UUID(uuidString: key) != nil)
        // The stream's request of the same conversation again (a new stream): rated, not shown.
        conversation.apply(Self.requested())
        #expect(conversation.ratingRequest == nil)
        await conversation.stop()
    }

    @Test func aBlankCommentIsNone() async throws {
        let server = try LocalHTTPServer(answers: [Self.rated(score: 5)])
        defer { server.stop() }
        let conversation = try await Self.conversation(server)
        conversation.apply(Self.requested())
        try await conversation.rate(score: 5, comment: " \n ")
        let body = try #require(server.requests.current.first?.body)
        #expect(try JSONSerialization.jsonObject(with: body) as? [String: Int] == ["score": 5])
        await conversation.stop()
    }

    @Test func aRetryAfterAFailureGoesUnderTheSameKeyAndTheNextRequestGetsItsOwn() async throws {
        let server = try LocalHTTPServer(answers: [
            Self.refused(503, "busy"), Self.rated(200), Self.rated(201, score: 2),
        ])
        defer { server.stop() }
        let conversation = try await Self.conversation(server)
        conversation.apply(Self.requested())
        let error = await #expect(throws: ThreadDeskError.self) { try await conversation.rate(score: 4) }
        #expect(error?.isServer(status: 503) == true)
        // The answer never came as far as the user knows: the request still waits.
        #expect(conversation.ratingRequest == Self.request && !conversation.isRating)
        try await conversation.rate(score: 4)
        #expect(conversation.ratingRequest == nil)
        let next = RatingRequest(conversationId: "1311000000000000009", requestedAt: "2026-12-08T10:00:00Z")
        conversation.apply(Self.requested(next))
        #expect(conversation.ratingRequest == next)
        try await conversation.rate(score: 2)
        let keys = server.requests.current.map { $0.headers["idempotency-key"] }
        #expect(keys.count == 3 && keys[0] != nil && keys[0] == keys[1] && keys[2] != keys[0])
        await conversation.stop()
    }

    @Test func twoTapsAtOnceSendOneRating() async throws {
        let server = try LocalHTTPServer(answers: [Self.rated(score: 5)])
        defer { server.stop() }
        let conversation = try await Self.conversation(server)
        conversation.apply(Self.requested())
        async let first: Void = conversation.rate(score: 5)
        async let second: Void = conversation.rate(score: 5)
        _ = try await (first, second)
        #expect(server.requests.current.count == 1)
        #expect(conversation.ratingRequest == nil)
        await conversation.stop()
    }

    @Test func alreadyRatedIsDoneAndClearsTheRequest() async throws {
        let server = try LocalHTTPServer(answers: [Self.refused(409, "already_rated")])
        defer { server.stop() }
        let conversation = try await Self.conversation(server)
        conversation.apply(Self.requested())
        try await conversation.rate(score: 3)
        #expect(conversation.ratingRequest == nil && server.requests.current.count == 1)
        await conversation.stop()
    }

    @Test func ratingNotRequestedClearsTheRequestAndSaysSo() async throws {
        let server = try LocalHTTPServer(answers: [Self.refused(409, "rating_not_requested")])
        defer { server.stop() }
        let conversation = try await Self.conversation(server)
        conversation.apply(Self.requested())
        let error = await #expect(throws: ThreadDeskError.self) { try await conversation.rate(score: 3) }
        #expect(error?.isServer(status: 409, code: .ratingNotRequested) == true)
        #expect(conversation.ratingRequest == nil)
        await conversation.stop()
    }

    @Test func theServersInvalidRatingKeepsTheRequest() async throws {
        let server = try LocalHTTPServer(answers: [Self.refused(400, "invalid_rating")])
        defer { server.stop() }
        let conversation = try await Self.conversation(server)
        conversation.apply(Self.requested())
        let error = await #expect(throws: ThreadDeskError.self) { try await conversation.rate(score: 3, comment: "ok") }
        #expect(error?.isServer(status: 400, code: .invalidRating) == true)
        #expect(conversation.ratingRequest == Self.request)
        await conversation.stop()
    }

    @Test(arguments: [(0, nil), (6, nil), (-1, nil), (5, String(repeating: "a", count: 501)), (1, String(repeating: "👍🏽", count: 501))] as [(Int, String?)])
    func outOfRangeIsRefusedWithoutARequest(_ score: Int, _ comment: String?) async throws {
        let server = try LocalHTTPServer(answers: [Self.rated(score: 5)])
        defer { server.stop() }
        let conversation = try await Self.conversation(server)
        conversation.apply(Self.requested())
        let error = await #expect(throws: ThreadDeskError.self) { try await conversation.rate(score: score, comment: comment) }
        #expect(error?.kind == .invalidInput && error?.code == .invalidRating && error?.status == nil && error?.isRetryable == false)
        #expect(conversation.ratingRequest == Self.request)
        // The client's own call refuses it too; then a rating in range goes (the positive marker:
        // the server's first request is that one).
        await #expect(throws: ThreadDeskError.self) {
            try await conversation.client.rate(RatingSubmission(score: score, comment: comment), idempotencyKey: "k")
        }
        try await conversation.rate(score: 5, comment: String(repeating: "👍🏽", count: 500) + "  ")
        let sent = try #require(server.requests.current.first)
        #expect(server.requests.current.count == 1)
        #expect(try JSONDecoder().decode(RatingSubmission.self, from: sent.body).comment?.count == 500)
        await conversation.stop()
    }

    @Test func withoutARequestNothingIsSent() async throws {
        let server = try LocalHTTPServer(answers: [])
        defer { server.stop() }
        let conversation = try await Self.conversation(server)
        let error = await #expect(throws: ThreadDeskError.self) { try await conversation.rate(score: 5) }
        #expect(error?.kind == .invalidInput && error?.code == .ratingNotRequested)
        #expect(error?.description == "Not sent to ThreadDesk: no conversation waits for a rating")
        #expect(server.requests.current.isEmpty)
        await conversation.stop()
    }

    @Test func isRatingIsObservedWhileTheRatingIsOnItsWay() async throws {
        let server = try LocalHTTPServer(answers: [Self.rated(score: 5)])
        defer { server.stop() }
        let conversation = try await Self.conversation(server)
        conversation.apply(Self.requested())
        let told = Flag()
        withObservationTracking { _ = conversation.isRating } onChange: { told.set() }
        try await conversation.rate(score: 5)
        #expect(told.isSet && !conversation.isRating)
        await conversation.stop()
    }

    // MARK: Pushes

    @Test func aRatingPushIsRecognisedAndAMessagePushIsUnchanged() {
        let rating: [AnyHashable: Any] = [
            "ratingConversationId": "1311000000000000001",
            "aps": ["alert": ["title": "Support", "body": "How did we do?"], "thread-id": "user-1"] as [String: Any],
        ]
        #expect(SupportRatingPush(userInfo: rating) == SupportRatingPush(conversationID: "1311000000000000001", userID: "user-1"))
        // Not a message push: an app's message handling never sees it.
        #expect(SupportPush(userInfo: rating) == nil)
        #expect(ThreadDeskClient.messageID(fromPush: rating) == nil)
        let message: [AnyHashable: Any] = [
            "messageId": "1311000000000000002", "aps": ["alert": ["title": "Support"], "badge": 3, "thread-id": "user-1"] as [String: Any],
        ]
        #expect(SupportRatingPush(userInfo: message) == nil)
        #expect(SupportPush(userInfo: message) == SupportPush(messageID: "1311000000000000002", badge: 3, userID: "user-1", isSilent: false))
        #expect(SupportRatingPush(userInfo: ["aps": ["alert": "Sale!"]]) == nil)
        #expect(SupportRatingPush(userInfo: ["ratingConversationId": "12ab"]) == nil)
        #expect(SupportRatingPush(userInfo: ["ratingConversationId": 1311]) == nil)
        #expect(SupportRatingPush(userInfo: ["ratingConversationId": String(repeating: "9", count: 40)]) == nil)
    }

    @Test func aRatingPushForAnotherUserFetchesNothing() async throws {
        let server = try LocalHTTPServer(answers: [Self.page(rating: false), Self.supportStatus])
        defer { server.stop() }
        let conversation = try await Self.conversation(server)
        // The conversation's user is known once a push of theirs was taken.
        await conversation.receive(SupportPush(messageID: "1", userID: "u1"))
        #expect(server.requests.current.count == 2)
        await conversation.receive(SupportRatingPush(conversationID: "1311000000000000001", userID: "someone-else"))
        #expect(server.requests.current.count == 2 && conversation.ratingRequest == nil)
        await conversation.stop()
    }

    @Test func theEventDecodesFromTheWire() throws {
        let event = try ThreadDeskEvent(ServerSentEvent(id: "9", name: "rating.requested", data: Self.requestJSON))
        #expect(event == .ratingRequested(Self.request))
        #expect(throws: ThreadDeskError.self) { try ThreadDeskEvent(ServerSentEvent(id: "9", name: "rating.requested", data: "{}")) }
    }
}
