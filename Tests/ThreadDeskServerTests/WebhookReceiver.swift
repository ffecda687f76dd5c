import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOFoundationCompat
import Synchronization
import Testing
import TestSupport
@testable import ThreadDeskServer

/// A webhook receiver on loopback for the tests: it checks each delivery's signature, keeps what
/// came, and answers with the statuses it is given (then 200).
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        let id: String
        let type: String
        let body: Data
        let signature: String
        let verified: Bool
        let json: JSON
        let header: (event: String?, delivery: String?)
    }

    let secret: String
    let received = Watched<[Received]>([])
    private let answers = Mutex<[HTTPResponse.Status]>([])
    /// How a delivery is answered, given how often its id came before (nil: by `answers`, then 200).
    private let rule = Mutex<(@Sendable (Received, Int) -> HTTPResponse.Status?)?>(nil)

    init(secret: String = "test-webhook-secret-0123456789abcdef") {
        self.secret = secret
    }

    /// The next deliveries are answered with `statuses`, in order.
    func answer(_ statuses: HTTPResponse.Status...) {
        answers.withLock { $0 += statuses }
    }

    /// Each delivery is answered by `decide`, given how often its id came before.
    func respond(_ decide: @escaping @Sendable (Received, Int) -> HTTPResponse.Status?) {
        rule.withLock { $0 = decide }
    }

    var deliveries: [Received] { received.value }

    /// While true, every request waits (up to two minutes) before it is answered: a slow receiver.
    let holding = Watched(false)

    /// Runs a receiver for the length of `body`, which gets its URL.
    static func withRunning(_ receiver: WebhookReceiver = WebhookReceiver(), _ body: @Sendable (WebhookReceiver, URL) async throws -> Void) async throws {
        let router = Router()
        router.post("hook") { request, _ -> Response in
            let bytes = try await request.body.collect(upTo: 1 << 20)
            let body = Data(buffer: bytes)
            let signature = request.headers[HTTPField.Name("ThreadDesk-Signature")!] ?? ""
            let json = (try? JSON.parse(body)) ?? .null
            let entry = Received(
                id: json["id"]?.stringValue ?? "", type: json["type"]?.stringValue ?? "", body: body, signature: signature,
                verified: WebhookSignature.verify(signature, body: body, secret: receiver.secret, now: Date()), json: json,
                header: (request.headers[HTTPField.Name("ThreadDesk-Event")!], request.headers[HTTPField.Name("ThreadDesk-Delivery")!]))
            let earlier = receiver.received.value.filter { $0.id == entry.id }.count
            let status = receiver.rule.withLock { $0 }?(entry, earlier)
                ?? receiver.answers.withLock { $0.isEmpty ? HTTPResponse.Status.ok : $0.removeFirst() }
            receiver.received.update { $0.append(entry) }
            if receiver.holding.value { try await receiver.holding.wait(for: "the receiver released") { !$0 } }
            return Response(status: status)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let port = try #require(client.port)
            try await body(receiver, URL(string: "http://127.0.0.1:\(port)/hook")!)
        }
    }

    /// Waits until `count` deliveries came.
    func wait(for count: Int) async throws {
        try await received.wait(for: "\(count) webhook deliveries") { $0.count >= count }
    }
}
