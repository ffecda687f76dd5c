import Foundation
import GRDB
import ThreadDeskCore

extension SQLiteStore: ConversationRecords {
    static func migrateConversations(_ migrator: inout DatabaseMigrator) {}
}
