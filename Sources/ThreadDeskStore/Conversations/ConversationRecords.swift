import Foundation
import ThreadDeskCore

/// Conversations with support, from the user's first message to the close (issue 60).
public protocol ConversationRecords: Sendable {}
