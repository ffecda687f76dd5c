import Foundation
import Synchronization
import ThreadDeskCore

/// Conversations in memory.
struct MemoryConversations {}

extension MemoryStore: ConversationRecords {}
