import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing
@testable import ThreadDeskServer

/// The receive deadline on a clock the test moves (an embedded event loop): when it closes the
/// connection, when it answers 408, and when it leaves a connection alone.
@Suite("Request arrival") struct RequestArrivalHandlerTests {
    static let limits = RequestArrivalLimits(timeout: .seconds(5), unreadBodyLimit: 100)
    static let upload = HTTPRequestPart.head(HTTPRequest(method: .post, scheme: nil, authority: "x", path: "/v1/messages"))

    /// A connected channel with the handler, as the server's pipeline has it after the codec.
    func connection() throws -> (EmbeddedChannel, RequestArrivalHandler) {
        let handler = RequestArrivalHandler(limits: Self.limits)
        let channel = EmbeddedChannel(handler: handler)
        try channel.connect(to: .init(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, handler)
    }

    @Test func aBodyStillArrivingAtTheDeadlineIsAnswered408AndClosed() throws {
        let (channel, _) = try connection()
        try channel.writeInbound(Self.upload)
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "part")))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(4999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        guard case .head(let head) = try channel.readOutbound(as: HTTPResponsePart.self) else { Issue.record("no answer"); return }
        #expect(head.status == .requestTimeout)
        // The reader of the body is told, not handed a short body.
        #expect(throws: RequestArrivedLate.self) { try channel.throwIfErrorCaught() }
    }

    @Test func aLateBodyAfterItsAnswerBeganClosesWithoutASecondAnswer() throws {
        let (channel, _) = try connection()
        try channel.writeInbound(Self.upload)
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .contentTooLarge)))
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(!channel.isActive)
        guard case .head(let head) = try channel.readOutbound(as: HTTPResponsePart.self) else { Issue.record("no answer"); return }
        #expect(head.status == .contentTooLarge)
        #expect(try channel.readOutbound(as: HTTPResponsePart.self) == nil)
    }

    @Test func aWholeRequestAndTheIdleTimeBetweenRequestsAreNotOnTheClock() throws {
        let (channel, handler) = try connection()
        try channel.writeInbound(Self.upload)
        try channel.writeInbound(HTTPRequestPart.end(nil))
        // Answering takes as long as it takes (the request's own deadline bounds it).
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        // The next request's first byte starts its clock.
        handler.bytesArrived()
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(!channel.isActive)
        guard case .head(let head) = try channel.readOutbound(as: HTTPResponsePart.self), head.status == .ok,
            case .end = try channel.readOutbound(as: HTTPResponsePart.self),
            case .head(let late) = try channel.readOutbound(as: HTTPResponsePart.self)
        else { Issue.record("not the answers expected"); return }
        #expect(late.status == .requestTimeout)
    }

    @Test func anUnreadBodyIsTakenUpToTheBoundAfterTheAnswerThenTheConnectionCloses() throws {
        let (channel, _) = try connection()
        try channel.writeInbound(Self.upload)
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .unauthorized)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(repeating: 0, count: 100)))
        #expect(channel.isActive)
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(repeating: 0, count: 1)))
        #expect(!channel.isActive)
    }

    @Test func anUnreadBodyThatEndsWithinTheBoundKeepsTheConnection() throws {
        let (channel, _) = try connection()
        try channel.writeInbound(Self.upload)
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .unauthorized)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(repeating: 0, count: 60)))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
    }
}
