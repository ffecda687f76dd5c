import Logging
import ServiceLifecycle
import UnixSignals

/// The service group the executables run. SIGTERM or SIGINT starts a graceful shutdown: the
/// server stops accepting, in-flight work gets `grace` to finish, then it is cancelled, and if
/// anything still has not ended `cancelGrace` later the process stops anyway.
public func buildServiceGroup(
    _ services: [any Service], grace: Duration, cancelGrace: Duration, logger: Logger
) -> ServiceGroup {
    var configuration = ServiceGroupConfiguration(
        services: services.map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    configuration.maximumGracefulShutdownDuration = grace
    configuration.maximumCancellationDuration = cancelGrace
    return ServiceGroup(configuration: configuration)
}
