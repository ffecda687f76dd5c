import Foundation
import Synchronization
import ThreadDeskCore

/// Webhook deliveries in memory.
struct MemoryWebhooks {}

extension MemoryStore: WebhookRecords {}
