import DiscordREST
import Foundation
import NIOFoundationCompat
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SoftwareAttester
import Testing
import TestSupport
@testable import ThreadDeskServer
import ThreadDeskWire

/// No slow client holds the server: a request's head and body arrive within the receive
/// deadline or the connection goes (408 when nothing was answered), and whatever its body held
/// (a large-upload slot) is free at once; a body nobody reads is not taken for ever. Each test
/// trickles for far longer than the deadline (a generous bound for a busy machine): without the
/// deadline the server never closes.
@Suite("Slow clients") struct SlowClientTests {
    static let receiveTimeout: Duration = .seconds(3)
    static let trickleFor: Duration = .seconds(120)

    @Test func anUploadTricklingAfterItsFirstMegabyteIsClosedWith408AndItsSlotFreed() async throws {
        try await withServer({
            // Long enough that the send below meets the slot held on a machine busy with the
            // whole suite (3 s was not: the trickler had its 408 before the check came).
            $0.receiveTimeout = .seconds(20)
            $0.attachments.largeUpload = 64 * 1024
            $0.attachments.maxConcurrentLarge = 1
        }) { server in
            let port = try #require(server.client.port)
            let slow = try await server.session()
            // The other user and their thread first: only one send lies between the trickler's
            // start and the check that it holds the slot.
            let (user, _, _) = try await server.userWithThread()
            let trickler = try await RawConnection.open(port: port)
            defer { trickler.close() }
            let file = "--b\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n"
            try await trickler.send(
                "POST /v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(slow.token)\r\nIdempotency-Key: trickle\r\n"
                    + "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 2000000\r\n\r\n" + file)
            try await trickler.send(ByteBuffer(data: AttachmentTests.png(extra: 100 * 1024)))
            let big = [AttachmentTests.Part(name: "files", filename: "big.png", contentType: "image/png", data: AttachmentTests.png(extra: 200 * 1024))]
            // The trickler holds the only slot (its 100 KiB are past the large-upload size).
            try await eventually("the trickling upload holds the large-upload slot") {
                try await AttachmentTests.send(server, token: user.token, big).errorCode == "busy"
            }
            #expect(await trickler.trickle(every: .milliseconds(200), until: Self.trickleFor), "the trickling upload was never closed")
            #expect(trickler.answer.hasPrefix("HTTP/1.1 408"), "\(trickler.answer)")
            let sent = try await AttachmentTests.send(server, token: user.token, big)
            #expect(sent.status == .created, "\(String(decoding: sent.body, as: UTF8.self))")
        }
    }

    @Test func aHeadSentALineAtATimeIsClosedWith408() async throws {
        // The idle timeout (30 s) restarts with every line; the receive deadline does not.
        try await withServer({ $0.receiveTimeout = Self.receiveTimeout }) { server in
            let connection = try await RawConnection.open(port: try #require(server.client.port))
            defer { connection.close() }
            try await connection.send("GET /health HTTP/1.1\r\nHost: x\r\n")
            #expect(await connection.trickle(every: .milliseconds(200), until: Self.trickleFor), "the trickled head was never closed")
            #expect(connection.answer.hasPrefix("HTTP/1.1 408"), "\(connection.answer)")
            #expect(try await server.request(.get, "/health").status == .ok)
        }
    }

    @Test func aHugeDeclaredBodyNobodyReadsIsClosedAtTheDeadlineAfterItsAnswer() async throws {
        try await withServer({ $0.receiveTimeout = Self.receiveTimeout }) { server in
            let connection = try await RawConnection.open(port: try #require(server.client.port))
            defer { connection.close() }
            try await connection.send("POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n")
            #expect(await connection.trickle(every: .milliseconds(200), until: Self.trickleFor), "the trickled body was never closed")
            // Answered (no token) before its body came: the answer stands, no 408 after it.
            #expect(connection.answer.hasPrefix("HTTP/1.1 401"), "\(connection.answer)")
            #expect(!connection.answer.contains("408"))
        }
    }

    @Test func aBodyNobodyReadsIsTakenOnlyUpToASmallBound() async throws {
        // A deadline and an idle timeout far away: only the bound on unread bytes can close this one.
        try await withServer({
            $0.receiveTimeout = .seconds(3600)
            $0.idleTimeout = .seconds(3600)
        }) { server in
            let connection = try await RawConnection.open(port: try #require(server.client.port))
            defer { connection.close() }
            // Chunked: a body without end, however fast it comes.
            try await connection.send("POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            try await connection.waitForAnswer("the request answered (no token) before its body") { $0.hasPrefix("HTTP/1.1 401") }
            // A megabyte at a time for as long as the server takes them.
            var chunk = ByteBuffer(string: "100000\r\n")
            chunk.writeRepeatingByte(UInt8(ascii: "x"), count: 1 << 20)
            chunk.writeString("\r\n")
            let started = ContinuousClock.now
            while connection.channel.isActive, started.duration(to: .now) < Self.trickleFor {
                guard (try? await connection.send(chunk)) != nil else { break }
            }
            #expect(await connection.channel.closes(within: .seconds(30)), "the server took an unread body for ever")
        }
    }

    /// An assertion's challenge is spent when its header is checked, before the body: a body that
    /// never arrives still used it up.
    @Test func anAssertionsChallengeIsSpentBeforeItsBodyIsRead() async throws {
        let attester = try SoftwareAttester()
        try await withServer({
            attestConfiguration(attester, mode: .required)(&$0)
            $0.receiveTimeout = Self.receiveTimeout
        }) { server in
            let device = AttestedDevice(attester)
            let opened = try await device.attest(server)
            let token = try #require(opened.json["token"]?.stringValue)
            let document = Data(#"{"battery":80}"#.utf8)
            let challenge = try await device.challenge(server)
            let header = try await device.assertion(server, method: "POST", path: "/v1/diagnostics", body: document, challenge: challenge)
            let late = try await RawConnection.open(port: try #require(server.client.port))
            defer { late.close() }
            try await late.send(
                "POST /v1/diagnostics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\(AppAttestAssertion.headerName): \(header)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{")
            #expect(await late.trickle(every: .milliseconds(200), until: Self.trickleFor), "the late body was never closed")
            let again = try await server.request(
                .post, "/v1/diagnostics", token: token, headers: [.init(AppAttestAssertion.headerName)!: header], raw: document)
            #expect(again.errorCode == "challenge_used", "\(String(decoding: again.body, as: UTF8.self))")
        }
    }
}
