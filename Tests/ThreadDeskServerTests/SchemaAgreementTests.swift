import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
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
}
