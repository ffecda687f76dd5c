import ThreadDeskCore

/// How long a request waits for its user's lock (each store keeps one per user in its process).
public enum UserLockWait {
    /// How long a request waits for a user's lock unless the store is told otherwise: longer than
    /// any one request should take, shorter than a client's patience.
    public static let standard: Duration = .seconds(30)

    static func lock(wait: Duration) -> KeyedFIFOLock<UserID> {
        KeyedFIFOLock<UserID>(defaultTimeout: wait, name: \.logValue)
    }
}
