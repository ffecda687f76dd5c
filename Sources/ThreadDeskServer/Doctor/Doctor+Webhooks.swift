import Deadlines
import Foundation
import ThreadDeskStore

/// The apps' webhooks: which are configured, and which their receivers turned off (410 Gone).
extension Doctor {
    public func webhookChecks() async -> [DoctorCheck] {
        let hooked = configuration.catalog.apps.filter { !$0.webhooks.isEmpty }
        guard !hooked.isEmpty else { return [DoctorCheck("webhooks", passed: "none configured")] }
        let off: [WebhookOff]
        do {
            off = try await webhooksOff()
        } catch {
            return [DoctorCheck("webhooks", failed: "the webhooks turned off cannot be read (\(error))", fix: "see the store's check")]
        }
        var checks: [DoctorCheck] = []
        for app in hooked {
            for target in app.webhooks {
                let key = target.key(app: app.id)
                var check: DoctorCheck
                if let gone = off.first(where: { $0.hook == key }) {
                    check = DoctorCheck(
                        "webhooks", failed: "\(target) is off: its receiver answered 410 Gone on \(gone.since.formatted(.iso8601)); nothing is sent to it",
                        fix: "once it takes events again: threaddesk admin webhooks on <its URL>\(configuration.catalog.isShared ? " --app \(app.id)" : "") (a new URL is a new webhook, on from the start)")
                } else {
                    let types = target.events.count == WebhookEventType.allCases.count ? "every event" : target.events.map(\.rawValue).sorted().joined(separator: ", ")
                    check = DoctorCheck("webhooks", passed: "\(target): \(types), signed")
                }
                checks.append(configuration.catalog.isShared ? check.naming(app) : check)
            }
        }
        return checks
    }

    /// What the store says of the webhooks turned off (nothing before its first start).
    private func webhooksOff() async throws -> [WebhookOff] {
        let url = configuration.storeURL
        if url.hasPrefix("sqlite://") {
            let path = String(url.dropFirst("sqlite://".count))
            guard FileManager.default.fileExists(atPath: path) else { return [] }
            return try SQLiteStore.webhooksOff(path: path) ?? []
        }
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            return try await withTimeout(options.storeTimeout, "PostgreSQL") {
                try await PostgresStore.withPools(url: url, logger: logger) { store in
                    try await store.schemaVersionFound() == PostgresStore.schemaVersion ? try await store.webhooksOff() : []
                }
            }
        }
        return []
    }
}
