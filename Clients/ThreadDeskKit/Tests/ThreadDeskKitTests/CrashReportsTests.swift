import Foundation
import Testing
@testable import ThreadDeskKit

/// The crash reporter's folder and sends: what is kept, what survives the app being killed, and
/// what is deleted after which answer. The server is the `upload` seam answering as the API
/// documents, or a client pointed at a closed port (no answer at all).
@Suite("Crash reports")
struct CrashReportsTests {
    static func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("threaddeskkit-crashes-\(UUID().uuidString)")
    }

    /// A MetricKit diagnostic payload as `jsonRepresentation()` gives it, with `crashes` crashes
    /// and `hangs` hangs (`tag` makes payloads differ).
    static func payload(crashes: Int = 1, hangs: Int = 0, tag: String = "a") -> Data {
        let crash = #"""
            {"version":"1.0.0","callStackTree":{"callStacks":[{"threadAttributed":true,"callStackRootFrames":[{"binaryUUID":"70B89F27-1634-3580-A695-57CDB41D7743","offsetIntoBinaryTextSegment":123,"sampleCount":1,"binaryName":"Demo","address":74565}]}],"callStackPerThread":true},"diagnosticMetaData":{"appBuildVersion":"42","appVersion":"1.2","exceptionType":1,"osVersion":"iPhone OS 17.4 (21E219)","deviceType":"iPhone15,2","signal":11,"exceptionCode":0,"platformArchitecture":"arm64","bundleIdentifier":"com.example.demo"}}
            """#
        let hang = #"{"version":"1.0.0","callStackTree":{"callStacks":[],"callStackPerThread":true},"diagnosticMetaData":{"hangDuration":"3 sec","appVersion":"1.2"}}"#
        let crashes = Array(repeating: crash, count: crashes).joined(separator: ",")
        let hangs = Array(repeating: hang, count: hangs).joined(separator: ",")
        return Data(#"{"timeStampBegin":"2026-11-27 10:00:00","timeStampEnd":"2026-11-28 10:00:00","tag":"\#(tag)","crashDiagnostics":[\#(crashes)],"hangDiagnostics":[\#(hangs)]}"#.utf8)
    }

    static func receipt(_ payload: Data) -> CrashUploadResult {
        CrashUploadResult(reports: [CrashReportReceipt(id: PayloadDigest.sha256Hex(payload), kind: "crash", group: "C1", symbolicated: false)])
    }

    /// A server that answers each upload with the next of `answers` (nil: 201 with a receipt)
    /// and records what it was sent.
    final class Server: Sendable {
        let answers: Locked<[ThreadDeskError?]>
        let received = Locked<[Data]>([])

        init(_ answers: [ThreadDeskError?] = []) { self.answers = Locked(answers) }

        func upload(_ payload: Data) throws(ThreadDeskError) -> CrashUploadResult {
            received.withLock { $0.append(payload) }
            let answer = answers.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            if let answer { throw answer }
            return CrashReportsTests.receipt(payload)
        }

        func reporter(_ directory: URL, maxKept: Int = 20) -> SupportCrashReports {
            SupportCrashReports(directory: directory, maxKept: maxKept) { payload throws(ThreadDeskError) in try self.upload(payload) }
        }
    }

    static func refused(_ status: Int, _ code: String, retryAfter: TimeInterval? = nil) -> ThreadDeskError {
        .server(status: status, code: ErrorCode(rawValue: code), message: "", retryAfter: retryAfter)
    }

    @Test func onlyPayloadsWithACrashOrAHangThatTheServerTakesAreKept() {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reports = Server().reporter(directory)
        #expect(reports.keep(Self.payload(crashes: 1)))
        #expect(reports.keep(Self.payload(crashes: 0, hangs: 2)))
        #expect(!reports.keep(Self.payload(crashes: 0, hangs: 0)))
        // CPU exceptions, disk writes, launches: no crash or hang, nothing the server files.
        #expect(!reports.keep(Data(#"{"cpuExceptionDiagnostics":[{"version":"1.0.0"}],"crashDiagnostics":null}"#.utf8)))
        #expect(!reports.keep(Data("not json".utf8)))
        #expect(!reports.keep(Data(#"[{"crashDiagnostics":[1]}]"#.utf8)))
        #expect(!reports.keep(Data(#"{"crashDiagnostics":{"a":1}}"#.utf8)))
        // Bigger than the server takes (2 MiB): not kept; exactly the limit is.
        let padding = ThreadDeskClient.crashReportLimit - Self.payload(tag: "").count
        #expect(reports.keep(Self.payload(tag: String(repeating: "x", count: padding))))
        #expect(!reports.keep(Self.payload(tag: String(repeating: "x", count: padding + 1))))
        #expect(reports.pendingPayloads().count == 3)
        // The same payload twice is kept once.
        #expect(reports.keep(Self.payload(crashes: 1)))
        #expect(reports.pendingPayloads().count == 3)
    }

    @Test func atMostMaxKeptWaitAndTheOldestGoFirst() {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reports = Server().reporter(directory, maxKept: 3)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for i in 0..<5 {
            #expect(reports.folder.keep(Self.payload(tag: "\(i)"), at: start.addingTimeInterval(Double(i))))
        }
        #expect(reports.pendingPayloads() == (2..<5).map { Self.payload(tag: "\($0)") })
    }

    @Test func keptPayloadsSurviveANewInstanceAndAreDeletedOnceTheServerHasThem() async throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = Self.payload(tag: "first"), second = Self.payload(crashes: 0, hangs: 1, tag: "second")
        do {
            let reports = Server().reporter(directory)
            #expect(reports.folder.keep(first, at: Date(timeIntervalSince1970: 100)))
            #expect(reports.folder.keep(second, at: Date(timeIntervalSince1970: 200)))
        }
        // Only the owner may read them.
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: directory.path).first)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        // The app was killed and launched again: a new reporter over the same folder sends them.
        let server = Server()
        let reports = server.reporter(directory)
        #expect(reports.pendingPayloads() == [first, second])
        let results = await reports.send()
        #expect(results == [Self.receipt(first), Self.receipt(second)])
        #expect(server.received.current == [first, second])
        #expect(reports.pendingPayloads().isEmpty)
        // Each once: nothing is left to send again.
        #expect(await reports.send().isEmpty)
        #expect(server.received.current.count == 2)
    }

    @Test(arguments: [
        refused(429, "rate_limited", retryAfter: 30), refused(503, "busy"), refused(500, "internal"), refused(401, "unauthorized"),
        ThreadDeskError.transport("no answer within 30 s"), ThreadDeskError.noSession,
    ])
    func aFailureRetryingCanFixKeepsThePayloadsForTheNextSession(_ failure: ThreadDeskError) async {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = Server([failure])
        let reports = server.reporter(directory)
        let first = Self.payload(tag: "1"), second = Self.payload(tag: "2")
        #expect(reports.folder.keep(first, at: Date(timeIntervalSince1970: 100)))
        #expect(reports.folder.keep(second, at: Date(timeIntervalSince1970: 200)))
        // The first fails: the second is not tried against a server that cannot take it now.
        #expect(await reports.send().isEmpty)
        #expect(server.received.current == [first])
        #expect(reports.pendingPayloads() == [first, second])
        // The next session: both go.
        #expect(await reports.send() == [Self.receipt(first), Self.receipt(second)])
        #expect(reports.pendingPayloads().isEmpty)
    }

    @Test func aPayloadRefusedForGoodIsDroppedAndTheNextOneStillGoes() async {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = Server([Self.refused(400, "invalid_crash_report"), Self.refused(413, "body_too_large")])
        let reports = server.reporter(directory)
        let payloads = (0..<3).map { Self.payload(tag: "\($0)") }
        for (i, payload) in payloads.enumerated() { #expect(reports.folder.keep(payload, at: Date(timeIntervalSince1970: Double(i)))) }
        #expect(await reports.send() == [Self.receipt(payloads[2])])
        #expect(server.received.current == payloads)
        #expect(reports.pendingPayloads().isEmpty)
    }

    @Test func sendsAtOnceGoOneAfterTheOtherAndSendEachPayloadOnce() async {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = Server()
        let reports = server.reporter(directory)
        let payloads = (0..<4).map { Self.payload(tag: "\($0)") }
        for (i, payload) in payloads.enumerated() { #expect(reports.folder.keep(payload, at: Date(timeIntervalSince1970: Double(i)))) }
        async let a = reports.send()
        async let b = reports.send()
        async let c = reports.send()
        let sent = await [a, b, c].flatMap { $0 }
        #expect(sent.count == 4)
        #expect(server.received.current == payloads)
    }

    @Test func withoutAServerTheClientsUploadFailsAndThePayloadStays() async throws {
        var configuration = ThreadDeskConfiguration(
            serverURL: URL(string: "http://127.0.0.1:9")!, appKey: "key", sessionStore: InMemorySessionStore(), outbox: InMemoryOutbox())
        configuration.sendAttempts = 1
        configuration.requestTimeout = 2
        let client = ThreadDeskClient(configuration)
        try await configuration.sessionStore.save(Session(userId: "app/u1", token: "t"))
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reports = SupportCrashReports(client: client, directory: directory)
        #expect(reports.keep(Self.payload()))
        #expect(await reports.send().isEmpty)
        #expect(reports.pendingPayloads() == [Self.payload()])
    }

    @Test func startingTwiceForOneClientGivesTheFirstReporter() async throws {
        let server = try LocalHTTPServer(answers: [.init(status: 201, body: #"{"reports":[]}"#)])
        defer { server.stop() }
        let client = try await CrashReportUploadTests.client(server)
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A payload from an earlier launch: the send that `start` begins has it to deliver.
        #expect(CrashReportFolder(directory: directory, maxKept: 20, maxSize: ThreadDeskClient.crashReportLimit).keep(Self.payload()))
        let first = SupportCrashReports.start(client: client, directory: directory)
        #expect(SupportCrashReports.start(client: client, directory: Self.folder()) === first)
        #expect(client.crashReports.current === first)
        first.stop()
        #expect(client.crashReports.current == nil)
        // The background send outlives `stop()`: seen delivering, then awaited (a later send waits
        // for it) before the test ends.
        try await Self.until { server.requests.current.count == 1 && first.pendingPayloads().isEmpty }
        #expect(await first.send().isEmpty)
        #expect(server.requests.current.count == 1, "the second start sent nothing")
    }

    /// Waits (10 s at most) for `condition`, which a background task makes true.
    static func until(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("the condition did not hold within 10 s")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func theIdempotencyKeyIsThePayloadsSHA256InHex() {
        #expect(PayloadDigest.sha256Hex(Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(PayloadDigest.sha256Hex(Data("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let twoBlocks = Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(PayloadDigest.sha256Hex(twoBlocks) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(PayloadDigest.sha256Hex(Data(repeating: 0x61, count: 1_000)) == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    @Test func receiptsDecodeAsTheServerWritesThem() throws {
        let json = #"{"reports":[{"id":"r1","kind":"crash","group":"C12","symbolicated":true},{"id":"r2","kind":"hang","group":"C3","symbolicated":false}]}"#
        let result = try JSONDecoder().decode(CrashUploadResult.self, from: Data(json.utf8))
        #expect(result == CrashUploadResult(reports: [
            CrashReportReceipt(id: "r1", kind: "crash", group: "C12", symbolicated: true),
            CrashReportReceipt(id: "r2", kind: "hang", group: "C3", symbolicated: false),
        ]))
        #expect(try JSONDecoder().decode(CrashUploadResult.self, from: JSONEncoder().encode(result)) == result)
    }
}

/// The client's upload against a real HTTP server: the request as the API documents it, and the
/// reporter's rules on the answers as they arrive over the wire.
@Suite("Crash report uploads over HTTP")
struct CrashReportUploadTests {
    static func client(_ server: LocalHTTPServer) async throws -> ThreadDeskClient {
        var configuration = ThreadDeskConfiguration(
            serverURL: server.url, appKey: "key", sessionStore: InMemorySessionStore(), outbox: InMemoryOutbox())
        configuration.sendAttempts = 1
        configuration.requestTimeout = 10
        try await configuration.sessionStore.save(Session(userId: "app/u1", token: "token-1"))
        return ThreadDeskClient(configuration)
    }

    @Test func thePayloadGoesAsItIsWithItsSHA256AsTheKeyAndTheReceiptsComeBack() async throws {
        let receipt = #"{"reports":[{"id":"r1","kind":"crash","group":"C12","symbolicated":true}]}"#
        let server = try LocalHTTPServer(answers: [.init(status: 201, body: receipt)])
        defer { server.stop() }
        let payload = CrashReportsTests.payload(crashes: 1, hangs: 1)
        let result = try await Self.client(server).uploadCrashReport(payload)
        #expect(result == CrashUploadResult(reports: [CrashReportReceipt(id: "r1", kind: "crash", group: "C12", symbolicated: true)]))
        let request = try #require(server.requests.current.first)
        #expect(request.method == "POST" && request.path == "/v1/crashes")
        #expect(request.headers["authorization"] == "Bearer token-1")
        #expect(request.headers["content-type"] == "application/json")
        #expect(request.headers["idempotency-key"] == PayloadDigest.sha256Hex(payload))
        #expect(request.body == payload)
    }

    @Test func theReporterDropsWhatTheServerRefusedForGoodAndKeepsWhatItAskedToSendLater() async throws {
        let server = try LocalHTTPServer(answers: [
            .init(status: 400, body: #"{"error":{"code":"invalid_crash_report","message":"no crash or hang"}}"#),
            .init(status: 429, headers: ["Retry-After": "30"], body: #"{"error":{"code":"rate_limited","message":"slow down"}}"#),
            .init(status: 200, body: #"{"reports":[]}"#),
        ])
        defer { server.stop() }
        let directory = CrashReportsTests.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reports = SupportCrashReports(client: try await Self.client(server), directory: directory)
        let refused = CrashReportsTests.payload(tag: "refused"), later = CrashReportsTests.payload(tag: "later")
        #expect(reports.folder.keep(refused, at: Date(timeIntervalSince1970: 1)))
        #expect(reports.folder.keep(later, at: Date(timeIntervalSince1970: 2)))
        #expect(await reports.send().isEmpty)
        #expect(reports.pendingPayloads() == [later])
        // The next session: the same payload under the same key, and the server's 200 (it had it).
        #expect(await reports.send() == [CrashUploadResult(reports: [])])
        #expect(reports.pendingPayloads().isEmpty)
        let keys = server.requests.current.map { $0.headers["idempotency-key"] }
        #expect(keys == [PayloadDigest.sha256Hex(refused), PayloadDigest.sha256Hex(later), PayloadDigest.sha256Hex(later)])
    }
}
