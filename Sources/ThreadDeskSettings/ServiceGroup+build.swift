import Logging
import ServiceLifecycle
import UnixSignals

/// The service group the executables run. SIGTERM or SIGINT starts a graceful shutdown: the
/// server stops accepting, in-flight work gets `grace` to finish, then it is cancelled, and if
/// anything still has not ended `cancelGrace` later the process ends anyway, with a log line
/// and status 1 (`ShutdownDeadline`), never ServiceGroup's trap. A group cancelled because a
/// service failed gets `cancelGrace`.
/// - Parameters:
///   - sleep: The deadline's clock (a test drives it).
///   - expire: What the deadline does (a test records it instead of ending the process).
public func buildServiceGroup(
    _ services: [any Service], grace: Duration, cancelGrace: Duration, logger: Logger,
    sleep: @escaping @Sendable (Duration) async throws -> Void = { try await ContinuousClock().sleep(for: $0) },
    expire: @escaping @Sendable (_ report: () -> Void) -> Void = ShutdownDeadline.exitProcess
) -> DeadlinedServiceGroup {
    let deadline = ShutdownDeadline(graceful: grace + cancelGrace, cancelled: cancelGrace, logger: logger, sleep: sleep, expire: expire)
    var configuration = ServiceGroupConfiguration(
        // The deadline last: services are told of a graceful shutdown from the last one back.
        services: services.map { .init(service: $0) }
            + [.init(service: deadline, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore)],
        gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    configuration.maximumGracefulShutdownDuration = grace
    configuration.maximumCancellationDuration = nil
    return DeadlinedServiceGroup(group: ServiceGroup(configuration: configuration), deadline: deadline)
}

/// A service group whose stop has a deadline; the deadline is off once the group has ended.
public struct DeadlinedServiceGroup: Sendable {
    let group: ServiceGroup
    let deadline: ShutdownDeadline

    public func run() async throws {
        defer { deadline.disarm() }
        try await group.run()
    }

    public func triggerGracefulShutdown() async { await group.triggerGracefulShutdown() }
}
