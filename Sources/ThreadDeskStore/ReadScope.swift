import Synchronization

/// The store reads of one request. A replica answers a read from memory only after a barrier
/// (`ReplicaCache`): word of every change committed before the read began has come. Within a
/// scope the first barrier vouches for the reads after it, which then see every change committed
/// before the scope began (and each word that came since): a poll pays for one barrier, not one
/// per read. For short requests only; a long one (an event stream) would stretch "began".
public final class ReadScope: Sendable {
    @TaskLocal public static var current: ReadScope?

    /// The listener's generation and the ping that came back in it after the scope began.
    let vouched = Mutex<(generation: UInt64, ping: UInt64)?>(nil)

    public init() {}

    /// Runs `body` in a new scope.
    public static func run<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async rethrows -> T {
        try await $current.withValue(ReadScope(), operation: body, isolation: isolation)
    }
}
