import APNs
import Logging
import ServiceLifecycle

/// The APNs client and the credentials it was made from. As a service it closes the client's
/// connections when the process shuts down, after the services that push (they stop first).
public final class PushSender: Service, Sendable {
    let client: APNsClient<ContinuousClock>
    let settings: APNsSettings

    public init(settings: APNsSettings, logger: Logger) throws {
        var configuration = APNsClient<ContinuousClock>.Configuration(
            topic: settings.topic, baseURL: settings.url, additionalTrustRootPEM: settings.caCertificatePEM)
        configuration.budget = settings.budget
        self.client = try APNsClient(
            configuration: configuration, keyID: settings.keyID, teamID: settings.teamID, privateKeyPEM: settings.privateKeyPEM,
            logger: logger)
        self.settings = settings
    }

    public func run() async throws {
        try? await gracefulShutdown()
        await client.shutdown()
    }
}
