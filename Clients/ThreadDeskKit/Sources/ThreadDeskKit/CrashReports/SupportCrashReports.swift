import Foundation

/// The app's crashes and hangs, sent to support: MetricKit's diagnostic payloads (Apple
/// platforms) kept on the device as they come, and sent with the next session. Opt in with one
/// line at launch:
///
/// ```swift
/// let support = ThreadDeskClient(.standard(serverURL: url, appKey: "…"))
/// SupportCrashReports.start(client: support)
/// ```
///
/// A payload is kept as a file (at most ``maxKept``, the oldest dropped; one over
/// ``ThreadDeskClient/crashReportLimit`` or with no crash or hang is not kept) and deleted only
/// once the server took it, or refused it for good (400, 413): without a network, a session, or
/// while the server asks to come back later, it waits for the next ``send()``.
public actor SupportCrashReports {
    /// Where the payloads wait.
    public nonisolated let directory: URL
    /// How many payloads wait at most.
    public nonisolated let maxKept: Int
    nonisolated let folder: CrashReportFolder
    private let upload: @Sendable (Data) async throws(ThreadDeskError) -> CrashUploadResult
    /// The send under way or last started: the next one waits for it, so no payload goes twice at once.
    private var lastSend: Task<[CrashUploadResult], Never>?
    #if canImport(MetricKit) && !os(tvOS) && !os(watchOS)
    nonisolated let subscriber = Locked<CrashReportSubscriber?>(nil)
    #endif
    private nonisolated let client: ThreadDeskClient?

    /// A reporter over `directory` (by default `crash-reports` in the Kit's folder of
    /// Application Support) that sends through `client`. ``start(client:directory:)`` is what an
    /// app calls; this one neither takes MetricKit's payloads nor sends by itself.
    public init(client: ThreadDeskClient, directory: URL? = nil, maxKept: Int = 20) {
        self.init(client: client, directory: directory ?? Self.defaultDirectory, maxKept: maxKept) { payload throws(ThreadDeskError) in
            try await client.uploadCrashReport(payload)
        }
    }

    /// With `upload` standing for the server (tests).
    init(
        client: ThreadDeskClient? = nil, directory: URL, maxKept: Int = 20,
        upload: @escaping @Sendable (Data) async throws(ThreadDeskError) -> CrashUploadResult
    ) {
        self.client = client
        self.directory = directory
        self.maxKept = maxKept
        self.upload = upload
        folder = CrashReportFolder(directory: directory, maxKept: maxKept, maxSize: ThreadDeskClient.crashReportLimit)
    }

    static var defaultDirectory: URL { ThreadDeskConfiguration.defaultFolder().appendingPathComponent("crash-reports") }

    /// Starts crash reporting for `client`, once (a second call returns the reporter started
    /// first): MetricKit's diagnostic payloads are kept as they come (iOS 14, macOS 12 and later)
    /// and sent at once, what an earlier launch kept is sent now, and the rest with the next
    /// session (a ``SupportConversation`` sends them whenever it goes live).
    @discardableResult
    public static func start(client: ThreadDeskClient, directory: URL? = nil) -> SupportCrashReports {
        let (reports, started) = client.crashReports.withLock { attached in
            if let attached { return (attached, false) }
            let reports = SupportCrashReports(client: client, directory: directory)
            attached = reports
            return (reports, true)
        }
        guard started else { return reports }
        reports.subscribe()
        Task { await reports.send() }
        return reports
    }

    /// Stops taking MetricKit's payloads, and the client no longer sends the kept ones (they stay
    /// for a later ``start(client:directory:)``).
    public nonisolated func stop() {
        unsubscribe()
        client?.crashReports.withLock { attached in
            if attached === self { attached = nil }
        }
    }

    /// Keeps a MetricKit diagnostic payload (`MXDiagnosticPayload.jsonRepresentation()`) until
    /// the server has it. False when it is not kept: bigger than
    /// ``ThreadDeskClient/crashReportLimit``, not JSON, or without a crash or hang.
    @discardableResult
    public nonisolated func keep(_ payload: Data) -> Bool {
        folder.keep(payload)
    }

    /// The payloads waiting to be sent, oldest first.
    public nonisolated func pendingPayloads() -> [Data] {
        folder.files().compactMap { try? Data(contentsOf: $0) }
    }

    /// Sends the kept payloads, oldest first, each once, and returns what the server made of
    /// those it took. One the server refused for good (400, 413) is dropped; at the first other
    /// failure (no network or session, 401, 429, 5xx) the rest wait for the next call.
    @discardableResult
    public func send() async -> [CrashUploadResult] {
        let run = SerialRun.after(lastSend) { await self.sendKept() }
        lastSend = run
        return await SerialRun.value(of: run)
    }

    private func sendKept() async -> [CrashUploadResult] {
        var results: [CrashUploadResult] = []
        for file in folder.files() {
            guard !Task.isCancelled else { break }
            guard let payload = try? Data(contentsOf: file) else {
                folder.remove(file)
                continue
            }
            do throws(ThreadDeskError) {
                results.append(try await upload(payload))
                folder.remove(file)
            } catch where Self.isRefusedForGood(error) {
                folder.remove(file)
            } catch {
                break
            }
        }
        return results
    }

    /// Sending it again cannot change the answer: not a diagnostic payload with a crash or hang
    /// (400), or too big (413).
    static func isRefusedForGood(_ error: ThreadDeskError) -> Bool {
        error.isServer(status: 400) || error.isServer(status: 413)
    }
}
