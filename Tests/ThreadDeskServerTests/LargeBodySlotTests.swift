import Foundation
import HTTPTypes
import HummingbirdTesting
import Hummingbird
import NIOCore
import Synchronization
import Testing
import TestSupport
@testable import ThreadDeskServer
import ThreadDeskStore

/// A user, and a network while per-address limits are on, holds at most one large-body slot at a
/// time (uploads and diagnostics together): one token that keeps renewing trickling bodies cannot
/// keep a process's slots from everyone else. A send's files are charged to the upload budget
/// from their declared size before a slot is taken, so a trickle cut off at the deadline has paid.
@Suite("Large-body slots") struct LargeBodySlotTests {
    /// How long the trickling token keeps renewing its bodies (real time: what is asserted is
    /// that every real upload was served, not how fast).
    static let attackFor: Duration = .seconds(20)

    @Test func oneTokenRenewingTricklingBodiesLeavesEveryOtherUsersUploadsServed() async throws {
        try await withServer({
            $0.receiveTimeout = .seconds(5)
            $0.attachments.largeUpload = 64 * 1024
        }) { server in
            let port = try #require(server.client.port)
            let attacker = try await server.session()
            var users: [Harness.Session] = []
            for _ in 0..<3 { users.append(try await server.userWithThread().session) }
            let started = ContinuousClock.now
            let (renewed, refusedAsHeld) = (Tally(), Tally())
            var served = 0
            var failures: [String] = []
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<12 {
                    group.addTask {
                        while started.duration(to: .now) < Self.attackFor {
                            let connection = try await RawConnection.open(port: port)
                            defer { connection.close() }
                            try await connection.send(index < 8 ? Self.tricklingUpload(attacker.token, key: "t\(index)") : Self.tricklingDiagnostics(attacker.token))
                            renewed.add()
                            _ = await connection.trickle(every: .milliseconds(250), until: .seconds(60))
                            if connection.answer.contains("upload_in_progress") { refusedAsHeld.add() }
                        }
                    }
                }
                // Real traffic once every trickler has sent the bytes that ask for a slot.
                try await eventually("the trickling bodies are under way") { renewed.count >= 12 }
                while started.duration(to: .now) < Self.attackFor {
                    for user in users {
                        let screenshot = AttachmentTests.Part(
                            name: "files", filename: "screen.png", contentType: "image/png", data: AttachmentTests.png(extra: 2 << 20))
                        let upload = try await AttachmentTests.send(server, token: user.token, [screenshot])
                        let diagnostics = try await server.request(.post, "/v1/diagnostics", token: user.token, raw: Self.largeDocument())
                        for (what, reply) in [("upload", upload), ("diagnostics", diagnostics)] {
                            if reply.status == .created { served += 1 } else { failures.append("\(what): \(reply.status.code) \(reply.errorCode ?? "")") }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(failures.isEmpty, "refused real uploads: \(failures)")
            #expect(served >= 6)
            // The token's other bodies were told it holds one already.
            #expect(refusedAsHeld.count > 0)
        }
    }

    @Test func aNetworkHoldsOneSlotAndAnUploadPaysItsDeclaredSizeFirst() async throws {
        try await withServer({
            $0.receiveTimeout = .seconds(5)
            $0.attachments.largeUpload = 64 * 1024
            $0.trustedProxies = ["127.0.0.1"]
            $0.quotas.uploadMiBPerAddress = QuotaLimit(1000, per: .seconds(3600))
            $0.quotas.uploadMiBPerUser = QuotaLimit(3, per: .seconds(3600))
        }) { server in
            let port = try #require(server.client.port)
            let (trickler, neighbour, elsewhere) = (try await server.session(), try await server.session(), try await server.session())
            let connection = try await RawConnection.open(port: port)
            defer { connection.close() }
            try await connection.send(Self.tricklingUpload(trickler.token, key: "trickle", from: "10.0.0.1"))
            // Another user of the same network waits for the trickler's slot; another network does not.
            try await eventually("the neighbour is told its network holds a slot") {
                try await Self.upload(server, neighbour.token, extra: 200 * 1024, from: "10.0.0.1").errorCode == "upload_in_progress"
            }
            #expect(try await Self.upload(server, elsewhere.token, extra: 200 * 1024, from: "10.0.0.2").status == .created)
            #expect(await connection.trickle(every: .milliseconds(250), until: .seconds(120)), "the trickle was never closed")
            #expect(connection.answer.hasPrefix("HTTP/1.1 408"), "\(connection.answer.prefix(200))")
            #expect(try await Self.upload(server, neighbour.token, extra: 200 * 1024, from: "10.0.0.1").status == .created)
            // The cut-off trickle paid its 1.9 MiB: 2 MiB more is past the user's 3 MiB.
            let over = try await Self.upload(server, trickler.token, extra: 2 << 20, from: "10.0.0.1")
            #expect(over.status == .tooManyRequests && over.errorCode == "rate_limited", "\(over.status) \(over.errorCode ?? "")")
            // A body that declares no size cannot be charged first.
            let chunked = try await RawConnection.open(port: port)
            defer { chunked.close() }
            try await chunked.send(
                "POST /v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(elsewhere.token)\r\nIdempotency-Key: c\r\n"
                    + "Content-Type: multipart/form-data; boundary=b\r\nTransfer-Encoding: chunked\r\n\r\n")
            try await chunked.waitForAnswer("411 for a body of no declared size") { $0.hasPrefix("HTTP/1.1 411") && $0.contains("length_required") }
        }
    }

    /// The head and first 100 KiB of a send declaring 2,000,000 bytes of files (past the
    /// large-upload size: it asks for a slot).
    static func tricklingUpload(_ token: String, key: String, from address: String? = nil) -> ByteBuffer {
        let file = "--b\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n"
        var buffer = ByteBuffer(
            string: "POST /v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nIdempotency-Key: \(key)\r\n"
                + (address.map { "X-Forwarded-For: \($0)\r\n" } ?? "")
                + "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 2000000\r\n\r\n" + file)
        buffer.writeBytes(AttachmentTests.png(extra: 100 * 1024))
        return buffer
    }

    /// The head and first MiB of a diagnostics document declaring 2,000,000 bytes.
    static func tricklingDiagnostics(_ token: String) -> ByteBuffer {
        var buffer = ByteBuffer(
            string: "POST /v1/diagnostics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n"
                + "Content-Type: application/json\r\nContent-Length: 2000000\r\n\r\n{\"log\":\"")
        buffer.writeRepeatingByte(UInt8(ascii: "x"), count: Request.largeBody)
        return buffer
    }

    /// A diagnostics document large enough to need a slot.
    static func largeDocument() -> Data {
        Data(("{\"log\":\"" + String(repeating: "y", count: Request.largeBody + 1024) + "\"}").utf8)
    }

    static func upload(_ server: Harness, _ token: String, extra: Int, from address: String) async throws -> Harness.Reply {
        let part = AttachmentTests.Part(name: "files", filename: "a.png", contentType: "image/png", data: AttachmentTests.png(extra: extra))
        let (body, type) = AttachmentTests.multipart([part])
        return try await server.request(
            .post, "/v1/messages", token: token, headers: [.init("Idempotency-Key")!: UUID().uuidString, .init("X-Forwarded-For")!: address],
            raw: body, contentType: type)
    }
}

/// A count several tasks add to.
private final class Tally: Sendable {
    private let value = Atomic<Int>(0)
    func add() { value.add(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}
