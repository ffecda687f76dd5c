import Foundation

/// Runs of one job that go one after another (sending what the device kept): each starts once the
/// one before it ended, so nothing goes twice at once, and a caller cancelled cancels its own run.
enum SerialRun {
    /// `work`, started once `before` has ended.
    static func after<T: Sendable>(_ before: Task<T, Never>?, _ work: @escaping @Sendable () async -> T) -> Task<T, Never> {
        Task {
            _ = await before?.value
            return await work()
        }
    }

    /// `run`'s result; cancelling the caller cancels the run.
    static func value<T: Sendable>(of run: Task<T, Never>) async -> T {
        await withTaskCancellationHandler {
            await run.value
        } onCancel: {
            run.cancel()
        }
    }
}
