import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Testing
import ThreadDeskStore
import ThreadDeskWire
import Yams

@testable import ThreadDeskServer

/// `openapi.yaml` is the API's contract: it must list exactly what the router serves.
@Suite("OpenAPI document")
struct OpenAPIDocumentTests {
    static let documentURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("openapi.yaml")

    /// `METHOD /path/{param}` for every operation in the document.
    static func documentedOperations(_ yaml: String) throws -> Set<String> {
        let document = try #require(try Yams.load(yaml: yaml) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: Any])
        var operations: Set<String> = []
        for (path, item) in paths {
            let methods = try #require(item as? [String: Any])
            for method in methods.keys where ["get", "put", "post", "delete", "patch", "head", "options"].contains(method) {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return operations
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedRouteExists() throws {
        var configuration = ServerConfiguration(
            discordToken: "token", discordAPIURL: "http://127.0.0.1:1/api/v10", guildID: "1", forumChannelID: "2", appKey: "app")
        // Every optional group of routes switched on: the document describes them all.
        configuration.legacyAPIKey = "legacy"
        configuration.gatewaySecret = "gateway"
        configuration.crashes.dsymsSecret = "dsyms-secret-0123456789"
        configuration.metricsToken = String(repeating: "m", count: 32)
        configuration.attest.mode = .optional
        configuration.attest.teamID = "ABCDE12345"
        configuration.attest.bundleIDs = ["com.example.app"]
        let root = ServerRoot(
            configuration: configuration, store: MemoryStore(), metrics: ServerMetrics(), inProcessGateway: false, time: .system,
            logger: Logger(label: "test"))
        let routed = Set(root.router.routes.map { "\($0.method.rawValue) \($0.path.description)" })
        let documented = try Self.documentedOperations(try String(contentsOf: Self.documentURL, encoding: .utf8))
        #expect(routed.count >= 15)
        #expect(routed.subtracting(documented).isEmpty, "routed but not documented: \(routed.subtracting(documented).sorted())")
        #expect(documented.subtracting(routed).isEmpty, "documented but not routed: \(documented.subtracting(routed).sorted())")
    }

    @Test func theServerServesTheDocumentItIsTestedAgainst() async throws {
        try await withServer { server in
            let response = try await server.request(.get, "/openapi.yaml")
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("application/yaml") == true)
            let served = String(decoding: response.body, as: UTF8.self)
            #expect(served == (try String(contentsOf: Self.documentURL, encoding: .utf8)))
            #expect(try Self.documentedOperations(served).contains("POST /v1/messages"))
        }
    }

    /// The error codes are ThreadDeskWire's `ErrorCode` (the server can answer no other: its errors
    /// take that type); the document names each of them for clients in other languages.
    @Test func everyErrorCodeIsDocumented() throws {
        let document = try #require(try Yams.load(yaml: try String(contentsOf: Self.documentURL, encoding: .utf8)) as? [String: Any])
        let components = try #require(document["components"] as? [String: Any])
        let schemas = try #require(components["schemas"] as? [String: Any])
        let error = try #require(schemas["Error"] as? [String: Any])
        let properties = try #require((error["properties"] as? [String: Any])?["error"] as? [String: Any])
        let code = try #require((properties["properties"] as? [String: Any])?["code"] as? [String: Any])
        let text = try #require(code["description"] as? String)
        #expect(ErrorCode.known.count >= 50)
        for known in ErrorCode.known {
            #expect(text.contains("`\(known.rawValue)`"), "\(known.rawValue) is not in openapi.yaml")
        }
        #expect(Set(ErrorCode.known.map(\.rawValue)).count == ErrorCode.known.count)
        for known in ErrorCode.known { #expect(ErrorCode(rawValue: known.rawValue) == known) }
    }
}
