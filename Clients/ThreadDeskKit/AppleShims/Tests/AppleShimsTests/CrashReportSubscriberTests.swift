@_spi(Shim) import MetricKit
import CryptoKit
import Foundation
import Testing
import ThreadDeskKit
import ThreadDeskWire

// `SupportCrashReports.start` subscribes to MetricKit only when the `#if canImport(MetricKit)`
// block was compiled: without it the shim's manager has no subscriber and nothing is kept.

/// The one metric manager is shared: these run one at a time.
@Suite("Crash reports from MetricKit", .serialized)
struct CrashReportSubscriberTests {
    private static let crash = Data(#"""
        {"timeStampBegin":"2026-11-27 10:00:00","timeStampEnd":"2026-11-28 10:00:00","crashDiagnostics":[{"version":"1.0.0","callStackTree":{"callStacks":[],"callStackPerThread":true},"diagnosticMetaData":{"appVersion":"1.2","signal":11}}]}
        """#.utf8)
    private static let cpuOnly = Data(#"{"timeStampBegin":"2026-11-27 10:00:00","cpuExceptionDiagnostics":[{"version":"1.0.0"}]}"#.utf8)

    /// A client with a kept session pointed at a closed port: the send the payload starts fails,
    /// so the payload stays.
    private static func client() async throws -> ThreadDeskClient {
        var configuration = ThreadDeskConfiguration(
            serverURL: URL(string: "http://127.0.0.1:9")!, appKey: "key", sessionStore: InMemorySessionStore(), outbox: InMemoryOutbox())
        configuration.sendAttempts = 1
        configuration.requestTimeout = 2
        try await configuration.sessionStore.save(Session(userId: "app/u1", token: "t"))
        return ThreadDeskClient(configuration)
    }

    @Test func aDiagnosticPayloadWithACrashIsKeptThroughTheSubscriber() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("appleshims-crashes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let reports = SupportCrashReports.start(client: try await Self.client(), directory: directory)
        #expect(MXMetricManager.shared.shimSubscriberCount == 1)

        MXMetricManager.shared.shimDeliver([MXDiagnosticPayload(json: Self.cpuOnly), MXDiagnosticPayload(json: Self.crash)])
        // Kept before the callback returned, exactly as MetricKit gave it; the CPU-only one is not.
        #expect(reports.pendingPayloads() == [Self.crash])
        // Its file is named by its SHA-256 (CryptoKit's here), the upload's idempotency key.
        let digest = SHA256.hash(data: Self.crash).map { String(format: "%02x", $0) }.joined()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).map { $0.hasSuffix("-\(digest).json") } == [true])
        // The send it started found no server: the payload waits for the next one.
        await reports.send()
        #expect(reports.pendingPayloads() == [Self.crash])

        reports.stop()
        #expect(MXMetricManager.shared.shimSubscriberCount == 0)
        MXMetricManager.shared.shimDeliver([MXDiagnosticPayload(json: Data(#"{"hangDiagnostics":[{}]}"#.utf8))])
        #expect(reports.pendingPayloads() == [Self.crash])
    }
}
