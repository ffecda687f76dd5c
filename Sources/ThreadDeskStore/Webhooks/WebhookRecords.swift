import Foundation
import ThreadDeskCore

/// Webhook deliveries waiting to go out (issue 60): recorded with what they report, delivered by
/// any replica, in order per conversation.
public protocol WebhookRecords: Sendable {}
