import Foundation
import GRDB
import ThreadDeskCore

extension SQLiteStore: WebhookRecords {
    static func migrateWebhooks(_ migrator: inout DatabaseMigrator) {}
}
