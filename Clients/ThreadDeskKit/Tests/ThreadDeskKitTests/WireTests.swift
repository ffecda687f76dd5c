import Foundation
import Testing
@testable import ThreadDeskKit

@Suite("Wire types and requests")
struct WireTests {
    @Test func errorCodesRoundTripAndUnknownCodesSurvive() throws {
        let known = try JSONDecoder().decode(ErrorBody.self, from: Data(#"{"error":{"code":"rate_limited","message":"slow down"}}"#.utf8))
        #expect(known.error.code == .rateLimited)
        let newer = try JSONDecoder().decode(ErrorBody.self, from: Data(#"{"error":{"code":"from_the_future","message":"?"}}"#.utf8))
        #expect(newer.error.code == ErrorCode(rawValue: "from_the_future"))
        #expect(!newer.error.code.isKnown && ErrorCode.rateLimited.isKnown)
        #expect(ErrorCode(rawValue: "http_405") == .http(status: 405))
        #expect(ErrorCode.http(status: 405).httpStatus == 405 && ErrorCode.rateLimited.httpStatus == nil)
        #expect(String(decoding: try JSONEncoder().encode(ErrorCode.invalidUserHash), as: UTF8.self) == #""invalid_user_hash""#)
        #expect(ErrorCode(rawValue: ErrorCode.messageTooLong.rawValue) == .messageTooLong)
    }

    @Test func anErrorAnswerBecomesATypedErrorWithItsWait() {
        let reply = Transport.Reply(
            status: 503, headers: ["retry-after": "7"], body: Data(#"{"error":{"code":"discord_busy","message":"busy"}}"#.utf8))
        let error = Transport.error(reply)
        #expect(error.code == .discordBusy)
        #expect(error.retryAfter == 7)
        #expect(error.isRetryable)
        // A proxy's HTML page is still an error with a code, and a huge Retry-After is capped.
        let html = Transport.error(Transport.Reply(status: 502, headers: ["retry-after": "99999999"], body: Data("<html>".utf8)))
        #expect(html.code == .http(status: 502))
        #expect(html.retryAfter == 3600)
        #expect(!Transport.error(Transport.Reply(status: 400, headers: [:], body: Data())).isRetryable)
    }

    @Test func anErrorIsAKindWithWhatIsKnownAndReadsAsBefore() {
        let busy = ThreadDeskError.server(status: 503, code: .discordBusy, message: "busy", retryAfter: 7)
        #expect(busy.kind == .server && busy.status == 503 && busy.code == .discordBusy && busy.message == "busy")
        #expect(busy.isServer(status: 503) && busy.isServer(status: 503, code: .discordBusy) && !busy.isServer(status: 503, code: .busy))
        #expect(busy.description == "ThreadDesk 503 discord_busy: busy")
        let pending = ThreadDeskError.pending(idempotencyKey: "k1", lastError: "no answer")
        #expect(pending.kind == .pending && pending.idempotencyKey == "k1" && pending.status == nil && pending.code == nil)
        #expect(pending.description == "Message k1 not confirmed yet (no answer); it stays in the outbox.")
        #expect(!pending.isRetryable && !pending.isServer(status: 503))
        #expect(ThreadDeskError.transport("offline").isRetryable && ThreadDeskError.transport("offline").description == "ThreadDesk unreachable: offline")
        #expect(ThreadDeskError.invalidResponse("odd").description == "Unexpected answer from ThreadDesk: odd")
        #expect(ThreadDeskError.noSession.kind == .noSession && ThreadDeskError.noSession.description == "No ThreadDesk session; call open() first.")
        #expect(ThreadDeskError.server(status: 409, code: .retryInProgress, message: "", retryAfter: nil).isRetryable)
        // An app's switch on the kind needs a default: a later kind does not break it.
        let shown: String
        switch pending.kind {
        case .server: shown = "refused"
        case .pending: shown = "sending"
        default: shown = "error"
        }
        #expect(shown == "sending")
    }

    @Test func installationValuesEncodeAsPlainJSON() throws {
        let info: [String: InstallationValue] = ["appVersion": "1.2", "build": 42, "beta": true, "ratio": 0.5]
        let object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(info)) as? [String: Any]
        #expect(object?["appVersion"] as? String == "1.2")
        #expect(object?["build"] as? Int == 42)
        #expect(object?["beta"] as? Bool == true)
        #expect(object?["ratio"] as? Double == 0.5)
        let decoded = try JSONDecoder().decode([String: InstallationValue].self, from: Data(#"{"a":"x","b":3,"c":false}"#.utf8))
        #expect(decoded == ["a": .string("x"), "b": .number(3), "c": .bool(false)])
    }

    @Test func eventsDecodeAndUnknownEventsAreSkipped() throws {
        let created = try ThreadDeskEvent(ServerSentEvent(
            id: "5", name: "message.created",
            data: #"{"id":"9","author":"support","authorName":"Ann","content":"hi","attachments":[],"createdAt":"2026-01-01T00:00:00.000Z"}"#))
        guard case .messageCreated(let message) = created else { Issue.record("not a message: \(String(describing: created))"); return }
        #expect(message.author == .support && message.content == "hi")
        #expect(try ThreadDeskEvent(ServerSentEvent(id: "6", name: "unread", data: #"{"count":3}"#)) == .unread(count: 3))
        #expect(try ThreadDeskEvent(ServerSentEvent(id: "6", name: "presence.v2", data: "{}")) == nil)
        let typing = try ThreadDeskEvent(ServerSentEvent(id: "6", name: "typing", data: #"{"expiresAt":"2026-01-01T00:00:10Z"}"#))
        #expect(typing == .typing(until: Date(timeIntervalSince1970: 1_767_225_610)))
        #expect(throws: ThreadDeskError.self) { try ThreadDeskEvent(ServerSentEvent(id: "6", name: "unread", data: "{oops")) }
    }

    @Test func anAssistantsAnswerIsSupportToTheAppAndMarkedAutomatic() throws {
        let json = #"{"id":"9","author":"assistant","authorName":"Assistant","content":"Restart the app.","attachments":[],"createdAt":"2026-01-01T00:00:00.000Z"}"#
        let wire = try JSONDecoder().decode(SupportMessage.self, from: Data(json.utf8))
        #expect(wire.author == .assistant)
        let shown = ConversationMessage(wire, server: URL(string: "https://desk.example")!)
        #expect(shown.author == .support(name: "Assistant") && shown.isAutomatic && !shown.isFromUser)
        // An agent's answer is not automatic; the raw value is what goes back on the wire.
        var agent = wire
        agent.author = .support
        #expect(!ConversationMessage(agent, server: URL(string: "https://desk.example")!).isAutomatic)
        #expect(String(decoding: try JSONEncoder().encode(MessageAuthor.assistant), as: UTF8.self) == #""assistant""#)
    }

    @Test func anAuthorThisSDKDoesNotKnowDecodesAsSupport() throws {
        let json = #"{"id":"9","author":"robot","authorName":"R2","content":"beep","attachments":[],"createdAt":"2026-01-01T00:00:00.000Z"}"#
        let wire = try JSONDecoder().decode(SupportMessage.self, from: Data(json.utf8))
        #expect(wire.author == .support)
        let shown = ConversationMessage(wire, server: URL(string: "https://desk.example")!)
        #expect(shown.author == .support(name: "R2") && !shown.isAutomatic)
        #expect(try JSONDecoder().decode([MessageAuthor].self, from: Data(#"["user","support","assistant",""]"#.utf8)) == [.user, .support, .assistant, .support])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MessageAuthor.self, from: Data("7".utf8)) }
    }

    @Test func aSnapshotKeptBeforeAutomaticAnswersStillLoads() throws {
        let message = ConversationMessage(id: "9", text: "hi", author: .support(name: "Ann"), date: Date(timeIntervalSince1970: 0), isAutomatic: true)
        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(message)) as? [String: Any])
        #expect(object["isAutomatic"] as? Bool == true)
        var older = object
        older["isAutomatic"] = nil
        let loaded = try JSONDecoder().decode(ConversationMessage.self, from: JSONSerialization.data(withJSONObject: older))
        var expected = message
        expected.isAutomatic = false
        #expect(loaded == expected)
        #expect(try JSONDecoder().decode(ConversationMessage.self, from: JSONEncoder().encode(message)) == message)
    }

    @Test func multipartBodiesCarryTheTextAndEachFileSafely() {
        let form = MultipartForm()
        let body = String(decoding: form.body(
            text: "look", files: [OutgoingFile(filename: "a\"b\r\n.png", contentType: "image/png\r\nX: y", data: Data("PNG".utf8))]),
            as: UTF8.self)
        #expect(form.contentType == "multipart/form-data; boundary=\(form.boundary)")
        #expect(body.contains("name=\"content\"\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nlook\r\n"))
        #expect(body.contains("filename=\"a_b__.png\""))
        #expect(body.contains("Content-Type: image/pngX: y\r\n"))
        #expect(body.hasSuffix("--\(form.boundary)--\r\n"))
    }

    @Test func pushPayloadsNameTheirMessage() {
        #expect(ThreadDeskClient.messageID(fromPush: ["aps": ["alert": "x"], "messageId": "123456"]) == "123456")
        #expect(ThreadDeskClient.messageID(fromPush: ["aps": ["alert": "x"]]) == nil)
        #expect(ThreadDeskClient.messageID(fromPush: ["messageId": "../x"]) == nil)
    }
}
