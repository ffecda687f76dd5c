import Foundation

/// The name an app's automatic answers are posted under, through the forum's webhook. No agent
/// may speak under it, so who wrote a message follows from Discord's message alone: a catch-up
/// or a reconciliation reading the thread again tells the assistant from support as ingestion did.
public struct AssistantName: Sendable, Hashable, CustomStringConvertible {
    public let name: String

    public init(_ name: String) { self.name = name }

    /// Whether `other` is this name as people read names: around spaces and case aside.
    public func matches(_ other: String) -> Bool {
        Self.folded(other) == Self.folded(name)
    }

    public var description: String { name }

    private static func folded(_ text: String) -> String { text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() }
}
