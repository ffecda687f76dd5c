import Foundation

#if canImport(MetricKit) && !os(tvOS) && !os(watchOS)
import MetricKit

/// MetricKit's diagnostic payloads (iOS 14, macOS 12 and later; the Kit's platforms all have
/// them) handed to the reporter as they come, and sent at once when one was kept.
final class CrashReportSubscriber: NSObject, MXMetricManagerSubscriber, Sendable {
    let reports: SupportCrashReports

    init(reports: SupportCrashReports) {
        self.reports = reports
    }

    /// Called on a queue of MetricKit's: the payloads are kept before it returns (the app may be
    /// suspended right after), then sent.
    func didReceive(_ payloads: [MXDiagnosticPayload]) {
        var kept = false
        for payload in payloads where reports.keep(payload.jsonRepresentation()) {
            kept = true
        }
        guard kept else { return }
        Task { [reports] in await reports.send() }
    }
}

extension SupportCrashReports {
    nonisolated func subscribe() {
        let subscriber = CrashReportSubscriber(reports: self)
        let previous = self.subscriber.withLock { current in
            defer { current = subscriber }
            return current
        }
        if let previous { MXMetricManager.shared.remove(previous) }
        MXMetricManager.shared.add(subscriber)
    }

    nonisolated func unsubscribe() {
        if let subscriber = subscriber.withLock({ current in defer { current = nil }; return current }) {
            MXMetricManager.shared.remove(subscriber)
        }
    }
}
#else
extension SupportCrashReports {
    /// No MetricKit here: payloads come only through ``keep(_:)``.
    nonisolated func subscribe() {}
    nonisolated func unsubscribe() {}
}
#endif
