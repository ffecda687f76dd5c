import Foundation

@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
extension SupportConversation {
    /// What a conversation is made with: page size, debounce, throttles and delays.
    public struct Options: Sendable {
        /// Messages fetched at a time (a first page, ``SupportConversation/loadEarlier()``).
        public var pageSize = 50
        /// Quiet time after the last keystroke before suggestions are asked for.
        public var suggestionDelay: Duration = .milliseconds(300)
        /// At most one typing report this often.
        public var typingInterval: Duration = .seconds(3)
        /// The device store is written at most this often (and when the conversation stops).
        public var saveDelay: Duration = .seconds(1)
        /// The wait before opening the session again after it failed (no network at launch).
        public var reopenDelay: Duration = .seconds(5)
        /// Told to support once the conversation is live (``ThreadDeskClient/updateInstallation(_:)``).
        public var installation: [String: InstallationValue]?

        public init() {}
    }
}
