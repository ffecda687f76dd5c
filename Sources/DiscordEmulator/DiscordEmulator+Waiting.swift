import Deadlines

extension DiscordEmulator {
    /// Returns once `condition` holds for the emulator (its counters, its request log, its
    /// messages), checked as requests arrive and are answered and as gateway frames come; throws
    /// `DeadlineExceeded` past `timeout`. No polling.
    public func waitUntil(
        _ what: String, timeout: Duration = .seconds(120), isolation: isolated (any Actor)? = #isolation,
        _ condition: (DiscordEmulator) -> Bool
    ) async throws {
        try await world.observers.wait(for: what, timeout: timeout) { condition(self) }
    }
}
