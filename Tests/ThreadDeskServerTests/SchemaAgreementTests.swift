import DiscordGateway
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
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
}
