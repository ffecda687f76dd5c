import DiscordGateway
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskWire
import Yams
@testable import ThreadDeskServer

/// What `openapi.yaml` says a route takes, the server takes: generated input that the document
/// allows is not refused for a rule the document does not state.
@Suite("The document and the server agree")
struct SchemaAgreementTests {
    /// The document allows `null` for an installation field (a field not set), as
    /// `PUT /v1/installation` takes it; so does opening a session.
    @Test func aSessionTakesAnInstallationFieldThatIsNull() async throws {
        try await withServer { server in
            let opened = try await server.request(
                .post, "/v1/session", headers: [.init("X-App-Key")!: "test-app-key"],
                json: #"{"installation":{"appVersion":"1.2","theme":null}}"#)
            #expect(opened.status == .created, "\(String(decoding: opened.body, as: UTF8.self))")
            let token = try #require(opened.json["token"]?.stringValue)
            #expect(try await server.request(.put, "/v1/installation", token: token, json: #"{"appVersion":"1.2","theme":null}"#).status == .ok)
        }
    }

    /// The internal route's document names every event type the server reads (the decoder's
    /// `WireType`, which its switch covers exhaustively), and no other.
    @Test func theInternalRouteDocumentsEveryEventTypeItTakes() throws {
        let document = try #require(try Yams.load(yaml: try String(contentsOf: OpenAPIDocumentTests.documentURL, encoding: .utf8)) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let event = try #require(schemas["ForumEvent"] as? [String: Any])
        let type = try #require((event["properties"] as? [String: Any])?["type"] as? [String: Any])
        let documented = Set(try #require(type["enum"] as? [String]))
        #expect(documented == Set(ForumEvent.WireType.allCases.map(\.rawValue)))
    }

    /// A message's authors in the document are the API's own, every one, and the document tells
    /// clients what to make of one they do not know.
    @Test func theDocumentNamesEveryAuthorOfAMessage() throws {
        let document = try #require(try Yams.load(yaml: try String(contentsOf: OpenAPIDocumentTests.documentURL, encoding: .utf8)) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let message = try #require(schemas["Message"] as? [String: Any])
        let author = try #require((message["properties"] as? [String: Any])?["author"] as? [String: Any])
        #expect(Set(try #require(author["enum"] as? [String])) == Set(MessageAuthor.allCases.map(\.rawValue)))
        #expect((author["description"] as? String)?.contains("treats any author it does not know as `support`") == true)
    }
}
