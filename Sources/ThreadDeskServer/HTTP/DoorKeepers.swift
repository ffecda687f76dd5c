import Hummingbird
import ThreadDeskStore

/// What the user doors ask of sessions: whose live token a request presents. The sessions stand
/// above the doors (their routes register on `V1Groups`), so the doors name what they need and
/// `SessionService` answers it.
protocol TokenAuthority: Sendable {
    /// The user whose live token `token` is; a `SupportFailure` otherwise. `notingUseApart`: the
    /// token's use is noted beside the request, never in its path.
    func authenticate(token: String, notingUseApart: Bool) async throws -> UserRecord
}

/// What the doors ask of App Attest when it is on (`AttestService`): whether a device's key is
/// still trusted, and the middleware that checks a request's assertion.
protocol DeviceTrust: Sendable {
    var mode: AppAttestSettings.Mode { get }
    /// Counts a refusal at `step` (the metrics of App Attest).
    func count(_ failure: DeviceCheckFailure, step: String)
    /// Throws a `DeviceCheckFailure` when the device's key is forgotten or no longer trusted.
    func requireTrusted(_ device: String) async throws
    /// Notes a served request of the attested device (its key is in use).
    func noteUse(of device: String) async
    /// `group`, requiring an assertion over the requests `applies` picks (bodies up to `limit`;
    /// from `gate.from` bytes on, a body takes a slot of `gate` for `holder` first).
    func asserting(
        _ group: RouterGroup<ThreadDeskRequestContext>, limit: Int, gate: (gate: ConcurrencyGate, from: Int)?,
        holder: @escaping @Sendable (Request, ThreadDeskRequestContext) throws -> SlotHolder,
        applies: @escaping @Sendable (Request, ThreadDeskRequestContext) -> Bool
    ) -> RouterGroup<ThreadDeskRequestContext>
}
