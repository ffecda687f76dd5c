import AssistClient
import AsyncHTTPClient
import Foundation
import Logging

/// The assistant's provider: for each distinct one the apps use, `GET {url}/models` within 10 s —
/// the URL answers, the key is accepted, the model is served.
extension Doctor {
    func assistChecks() async -> [DoctorCheck] {
        let catalog = configuration.catalog
        let providers = Dictionary(
            catalog.apps.compactMap { app in configuration.assist.effective(for: app).map { ($0.provider, app) } }, uniquingKeysWith: { first, _ in first })
        guard !providers.isEmpty else { return [DoctorCheck("assist", passed: "off: no drafted answers (set ASSIST_URL and ASSIST_MODEL to have them)")] }
        let client = AssistService.makeHTTPClient()
        var checks: [DoctorCheck] = []
        for (provider, app) in providers.sorted(by: { $0.key.url + $0.key.model < $1.key.url + $1.key.model }) {
            var settings = AssistClient.Configuration(baseURL: provider.url, model: provider.model, apiKey: provider.apiKey)
            settings.deadline = .seconds(10)
            settings.maxAttempts = 1
            let assist = AssistClient(configuration: settings, httpClient: client, logger: logger)
            var check: DoctorCheck
            do {
                let models = try await assist.models()
                check = models.contains(provider.model)
                    ? DoctorCheck("assist.provider", passed: "\(provider.url) serves \(provider.model)")
                    : DoctorCheck(
                        "assist.provider", failed: "\(provider.url) does not list the model \(provider.model) (it lists \(models.prefix(5).joined(separator: ", ")))",
                        fix: "set ASSIST_MODEL (or the app's assist.model) to a model the provider serves")
            } catch .refused(let status, _) where status == 401 || status == 403 {
                check = DoctorCheck(
                    "assist.provider", failed: "\(provider.url) refused the key (HTTP \(status))",
                    fix: "put the provider's key in the file ASSIST_API_KEY_FILE (or the app's assist.apiKeyFile) names")
            } catch {
                check = DoctorCheck(
                    "assist.provider", failed: "\(provider.url): \(error)",
                    fix: "ASSIST_URL is the root holding /chat/completions and /models (https://api.openai.com/v1, http://127.0.0.1:11434/v1)")
            }
            checks.append(catalog.apps.count > 1 ? check.naming(app) : check)
        }
        try? await client.shutdown()
        return checks
    }
}
