import DiscordEmulator
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
import TestSupport
import ThreadDeskServer

/// An open stream after its first events is held by `EventStreamHandler` in the connection's
/// pipeline, with no task of its own: keep-alives, events, its lifetime, a client that leaves or
/// sends another request on it, each as a client sees them.
@Suite("Live: the stream's handler", .timeLimit(.minutes(3)))
struct EventStreamHandlerTests {
    /// The hub's timer ticks on the server's clock, which the test moves (a keep-alive a tick).
    @Test func keepAlivesComeOnAnIdleStreamAndEventsBetweenThem() async throws {
        let clock = ManualClock()
        let keepAlive = Duration.milliseconds(100)
        try await withServer(gateway: true, time: .driven(by: clock), { $0.live.keepAlive = keepAlive }) { server in
            let (user, thread, _) = try await server.userWithThread()
            let stream = try await LiveTests.stream(server, user.token)
            defer { stream.close() }
            // The connection ends with the stream: the client sends nothing more on it.
            #expect(stream.headers["connection"] == ["close"])
            try await server.passingTicks(of: keepAlive, on: clock) { try await stream.comments(reach: 3, "three keep-alives") }
            try server.emulator.replyAsAgent(inThread: thread, content: "between keep-alives")
            let reply = try await stream.next("the reply") { $0.name == "message.created" }
            #expect(reply.json["content"] as? String == "between keep-alives")
            let before = stream.comments
            try await server.passingTicks(of: keepAlive, on: clock) { try await stream.comments(reach: before + 2, "keep-alives after the reply") }
            #expect(!stream.ended)
        }
    }

    /// The lifetime is measured on the server's clock: the hub's sweep ends the stream once the
    /// test has moved the clock past it.
    @Test func aStreamEndsCleanlyWhenItsLifetimeIsOverAndResumesWithoutLoss() async throws {
        let clock = ManualClock()
        try await withServer(gateway: true, time: .driven(by: clock), { $0.live.maxStreamDuration = .seconds(1) }) { server in
            let (user, thread, _) = try await server.userWithThread()
            let stream = try await LiveTests.stream(server, user.token)
            // A tick of a tenth of the lifetime (`KeepAliveRounds`); a sweep every ten.
            try await server.passingTicks(of: .milliseconds(100), on: clock) { try await stream.ends("the stream's lifetime over") }
            #expect(stream.endedCleanly)
            try await server.openStreams(0)
            // What came after it ended is replayed from its last event.
            try server.emulator.replyAsAgent(inThread: thread, content: "while away")
            // The reply's push waits on the server's clock a moment: the test moves it.
            try await server.settled(driving: clock)
            let resumed = try await LiveTests.stream(server, user.token, lastEventID: stream.lastEventID)
            defer { resumed.close() }
            #expect(resumed.events(named: "message.created").map { $0.json["content"] as? String } == ["while away"])
        }
    }

    /// Once its first events are written, a stream's connection has no task running: five open
    /// streams add none (the test's own client, asking one thing at a time, may open one more
    /// connection of its own meanwhile).
    @Test func anOpenStreamHoldsNoTask() async throws {
        try await withServer { server in
            var users: [Harness.Session] = []
            for _ in 0..<5 { users.append(try await server.session()) }
            let before = try await server.metric("threaddesk_http_connection_tasks")
            var sockets: [any Channel] = []
            defer { sockets.forEach { $0.close(promise: nil) } }
            for user in users { sockets.append(try await Self.openStream(server, token: user.token)) }
            try await server.openStreams(5)
            try await eventually("their connections' tasks ended") {
                try await server.metric("threaddesk_http_connection_tasks") <= before + 1
            }
        }
    }

    /// With keep-alives an hour apart nothing is written that would fail: the handler reads the
    /// connection, so the client leaving is its end at once.
    @Test func aClientThatLeavesIsLetGoAtOnce() async throws {
        try await withServer({
            $0.live.keepAlive = .seconds(3600)
            // Nor does the connection's idle time end it first.
            $0.idleTimeout = .seconds(3600)
        }) { server in
            let user = try await server.session()
            let socket = try await Self.openStream(server, token: user.token)
            try await server.openStreams(1)
            try await socket.close()
            try await server.openStreams(0)
        }
    }

    /// A stream's answer never ends, so a request sent after it on the same connection cannot be
    /// answered: the connection closes (the client opens another for it).
    @Test func aRequestOnAStreamsConnectionClosesIt() async throws {
        try await withServer({ $0.live.keepAlive = .seconds(3600) }) { server in
            let user = try await server.session()
            let socket = try await Self.openStream(server, token: user.token)
            defer { socket.close(promise: nil) }
            try await server.openStreams(1)
            let next = "GET /v1/unread HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(user.token)\r\n\r\n"
            try await socket.writeAndFlush(ByteBuffer(string: next)).get()
            try #require(await socket.closes(within: .seconds(120)), "the connection closed")
            try await server.openStreams(0)
            // The server goes on answering on other connections.
            #expect(try await server.request(.get, "/v1/unread", token: user.token).status == .ok)
        }
    }

    /// The same, with the next request sent right behind the stream's (pipelined, one write): its
    /// head is read before the stream's handler is in place, so the connection's task holds it;
    /// the connection still closes. (A loaded machine made the test above meet this now and then.)
    @Test func aRequestPipelinedBehindTheStreamClosesItToo() async throws {
        try await withServer({ $0.live.keepAlive = .seconds(3600) }) { server in
            let user = try await server.session()
            let port = try #require(server.client.port)
            let socket = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
            defer { socket.close(promise: nil) }
            let both = "GET /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(user.token)\r\n\r\n"
                + "GET /v1/unread HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(user.token)\r\n\r\n"
            try await socket.writeAndFlush(ByteBuffer(string: both)).get()
            try #require(await socket.closes(within: .seconds(120)), "the connection closed")
            try await server.openStreams(0)
            #expect(try await server.request(.get, "/v1/unread", token: user.token).status == .ok)
        }
    }

    /// A raw connection that asks for the stream (and drops what it reads).
    static func openStream(_ server: Harness, token: String) async throws -> any Channel {
        let port = try #require(server.client.port)
        let socket = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
        let head = "GET /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(token)\r\n\r\n"
        try await socket.writeAndFlush(ByteBuffer(string: head)).get()
        return socket
    }
}
