import Deadlines
import DiscordREST
import Foundation
import Testing
import ThreadDeskCore
import ThreadDeskStore
@testable import ThreadDeskServer

/// What `WebhookEvents` records: one delivery per webhook of the event's app that takes its type,
/// the body fixed, the user named as the API names them.
@Suite struct WebhookEventsTests {
    @Test func eachWebhookOfTheAppThatTakesTheTypeGetsItsOwnDelivery() throws {
        let beta = try #require(AppID("beta"))
        var shop = AppSettings(id: .default, name: "Shop", appKey: "shop-key-0123456789", guildID: "1", forumChannelID: "2")
        shop.webhooks = [WebhookTarget(url: URL(string: "https://shop.example.com/hook")!, secret: String(repeating: "s", count: 32))]
        var other = AppSettings(id: beta, name: "Beta", appKey: "beta-key-0123456789", guildID: "1", forumChannelID: "3")
        other.webhooks = [
            WebhookTarget(url: URL(string: "https://beta.example.com/all")!, secret: String(repeating: "b", count: 32)),
            WebhookTarget(url: URL(string: "https://beta.example.com/crashes")!, secret: String(repeating: "c", count: 32), events: [.crashReported]),
        ]
        let events = WebhookEvents(
            catalog: AppCatalog([shop, other]), store: MemoryStore(), recorded: WakeSignal(), metrics: ServerMetrics(), logger: testLogger(),
            now: Date.init)
        let owner = UserID(app: beta, local: try #require(UserID("u_local")))
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        let made = events.deliveries(.messageDeleted, app: beta, owner: owner, data: WebhookDeletedMessage(id: "42", userId: owner.local.rawValue), at: at)
        #expect(made.count == 1, "the crash-only webhook takes no message event")
        let delivery = try #require(made.first)
        #expect(delivery.hook == other.webhooks[0].key(app: beta) && delivery.owner == owner && delivery.type == "message.deleted")
        let body = try JSON.parse(delivery.body)
        #expect(body["id"]?.stringValue == delivery.id && body["app"]?.stringValue == "beta" && body["type"]?.stringValue == "message.deleted")
        #expect(body["createdAt"]?.stringValue == "2027-01-15T08:00:00.000Z")
        #expect(body["data"]?["userId"]?.stringValue == "u_local" && body["data"]?["id"]?.stringValue == "42")
        #expect(events.deliveries(.crashReported, app: beta, owner: owner, data: ["x": 1], at: at).count == 2)
        // Another app's event never reaches beta's webhooks.
        #expect(events.deliveries(.messageDeleted, app: .default, owner: try #require(UserID("u_shop")), data: ["x": 1], at: at).map(\.hook)
            == [shop.webhooks[0].key(app: .default)])
    }
}
