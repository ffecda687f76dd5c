import Foundation
import PostgresNIO
import ThreadDeskCore

extension PostgresStore: ConversationRecords {
    /// Conversations (schema 17).
    static let conversationSchema: [String] = []
}
