import Foundation
import Hummingbird
import NIOCore
import Synchronization
import ThreadDeskServer

/// The sandbox's own webhook receiver: both apps' events come back to the sandbox, signed, are
/// checked as the README's "Verifying a delivery" says, and listed in the console (newest first).
final class SandboxWebhooks: Sendable {
    struct Entry: Codable, Sendable {
        var id: String
        var type: String
        var app: String
        /// The signature matched the secret, within five minutes.
        var verified: Bool
        /// The event's `data`, as JSON, cut short.
        var data: String
        var receivedAt: Date
        /// A retry of a delivery seen before (the same id).
        var again: Bool
    }

    let secret = Sandbox.randomHex(32)
    private let entries = Mutex<[Entry]>([])
    static let kept = 200

    /// Every event, to this sandbox's `port`.
    func target(port: Int) -> WebhookTarget {
        WebhookTarget(url: URL(string: "http://127.0.0.1:\(port)/sandbox/webhook")!, secret: secret)
    }

    /// Newest first.
    var log: [Entry] { entries.withLock { $0.reversed() } }

    func register(on sandbox: RouterGroup<ThreadDeskRequestContext>) {
        sandbox.post("webhook") { request, _ -> Response in
            let body = Data((try? await request.body.collect(upTo: 1 << 20)).map { Array($0.readableBytesView) } ?? [])
            let signature = request.headers[.init(WebhookSignature.header)!] ?? ""
            let verified = WebhookSignature.verify(signature, body: body, secret: self.secret, now: Date())
            let event = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
            let data = event["data"].flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys, .withoutEscapingSlashes]) }
            let id = event["id"] as? String ?? "?"
            self.entries.withLock { entries in
                let entry = Entry(
                    id: id, type: event["type"] as? String ?? "?", app: event["app"] as? String ?? "?", verified: verified,
                    data: String(String(decoding: data ?? Data(), as: UTF8.self).prefix(400)), receivedAt: Date(),
                    again: entries.contains { $0.id == id })
                entries = Array((entries + [entry]).suffix(Self.kept))
            }
            return Response(status: verified ? .noContent : .unauthorized)
        }
    }
}
