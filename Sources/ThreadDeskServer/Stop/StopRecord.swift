import Logging
import ServiceLifecycle
import Synchronization

/// What each service's stop took: when it heard of the stop (ServiceLifecycle tells one at a time,
/// each once the one after it in start order has ended) and when it ended, on the server's clock.
/// Once the last has stopped, one line (notice) names them in the order they stopped, so a stop
/// that ran past its grace says where its time went. The public listener is Hummingbird's own
/// service, told first: its part is from the drain's start (its quiesce) to the first service here.
final class StopRecord: Sendable {
    struct Entry: Sendable, Equatable {
        let name: String
        var heard: Duration?
        var ended: Duration?
    }

    private let time: ServerTime
    /// The stop's drain, begun by the public listener's quiesce.
    private let drain: ShutdownDrain?
    private let entries = Mutex<[Entry]>([])

    init(time: ServerTime, drain: ShutdownDrain? = nil) {
        (self.time, self.drain) = (time, drain)
    }

    /// A service's name in the record: its description, or its type's name.
    static func name(of service: any Service) -> String {
        (service as? any CustomStringConvertible)?.description ?? String(describing: type(of: service))
    }

    /// `service`, its stop noted here under `name` (by default `name(of:)`).
    func timed(_ service: any Service, name: String? = nil) -> any Service {
        let name = name ?? Self.name(of: service)
        let index = entries.withLock { entries in
            entries.append(Entry(name: name))
            return entries.count - 1
        }
        return TimedStop(service: service, record: self, index: index)
    }

    fileprivate func heard(_ index: Int) {
        let now = time.elapsed()
        entries.withLock { entries in if entries[index].heard == nil { entries[index].heard = now } }
    }

    fileprivate func ended(_ index: Int) {
        let now = time.elapsed()
        entries.withLock { $0[index].ended = now }
    }

    /// The services that heard of the stop, in the order they heard; first the public listener,
    /// from the drain's start, when that came before them.
    var stopped: [Entry] {
        let services = entries.withLock { $0 }.filter { $0.heard != nil }.sorted { $0.heard! < $1.heard! }
        guard let began = drain?.beganAt, let first = services.first?.heard, began < first else { return services }
        return [Entry(name: "public listener", heard: began, ended: first)] + services
    }

    /// One part per service that took at least `shown` to stop, in stop order: when it heard,
    /// counted from the first to hear, and how long it took ("LiveHub +2.410 s took 4.602 s").
    func summary(shown: Duration = .milliseconds(10)) -> String {
        let stopped = self.stopped
        guard let first = stopped.first?.heard else { return "" }
        var parts: [String] = []
        var quick = 0
        for entry in stopped {
            guard let heard = entry.heard else { continue }
            let took = entry.ended.map { $0 - heard }
            if let took, took < shown {
                quick += 1
                continue
            }
            parts.append("\(entry.name) +\(Self.seconds(heard - first)) s \(took.map { "took \(Self.seconds($0)) s" } ?? "still stopping")")
        }
        if quick > 0 { parts.append("\(quick) more under \(Self.seconds(shown)) s each") }
        return parts.joined(separator: "; ")
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let milliseconds = seconds * 1_000 + attoseconds / 1_000_000_000_000_000
        return "\(milliseconds / 1_000).\(String(repeating: "0", count: 3 - String(milliseconds % 1_000).count))\(milliseconds % 1_000)"
    }
}

/// A service whose stop `StopRecord` notes.
private struct TimedStop: Service, CustomStringConvertible {
    let service: any Service
    let record: StopRecord
    let index: Int

    var description: String { "\(service)" }

    func run() async throws {
        defer { record.ended(index) }
        try await withGracefulShutdownHandler {
            try await service.run()
        } onGracefulShutdown: {
            record.heard(index)
        }
    }
}

/// Says, once every other service has stopped (it starts first, so it stops last), what the
/// stop took, service by service (`StopRecord`). A stop cancelled (at its grace, or by a service
/// that failed) cancels this too, at once: it then names the services still stopping.
struct StopReport: Service {
    let record: StopRecord
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        let summary = record.summary()
        guard !summary.isEmpty else { return }
        let message: Logger.Message = Task.isCancelled ? "The stop was cancelled; so far, service by service" : "The stop, service by service"
        logger.notice(message, metadata: ["services": "\(summary)"])
    }
}
