import Foundation
import PostgresNIO
import ThreadDeskCore

extension PostgresStore: WebhookRecords {
    /// Webhook deliveries (schema 18).
    static let webhookSchema: [String] = []
}
