import ThreadDeskCore

/// The per-user lock every store keeps in its process.
public enum UserLock {
    /// How long a request waits for a user's lock unless the store is told otherwise: longer than
    /// any one request should take, shorter than a client's patience.
    public static let defaultWait: Duration = .seconds(30)

    static func make(wait: Duration) -> KeyedFIFOLock<UserID> {
        KeyedFIFOLock<UserID>(defaultTimeout: wait, name: \.logValue)
    }
}
