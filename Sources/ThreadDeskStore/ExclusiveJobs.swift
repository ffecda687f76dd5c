import Synchronization

/// Jobs that must not run twice at once within one process (the only process of an embedded store).
final class ExclusiveJobs: Sendable {
    private let running = Mutex<Set<String>>([])

    func exclusively<T: Sendable>(_ job: String, _ body: () async throws -> T) async throws -> T? {
        guard running.withLock({ $0.insert(job).inserted }) else { return nil }
        defer { _ = running.withLock { $0.remove(job) } }
        return try await body()
    }
}
