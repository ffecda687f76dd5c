// swift-tools-version:6.0
import PackageDescription

// ThreadDeskKit: the client SDK for ThreadDesk. No dependencies beyond Foundation
// (FoundationNetworking on Linux), so an app adds it with one line and pulls in nothing else.
// `ThreadDeskWire` holds the API's request, response and event types; the server builds on the
// same module, so the two cannot drift apart.
let package = Package(
    name: "ThreadDeskKit",
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .watchOS(.v8), .visionOS(.v1)],
    products: [
        .library(name: "ThreadDeskKit", targets: ["ThreadDeskKit"]),
        .library(name: "ThreadDeskWire", targets: ["ThreadDeskWire"]),
        .executable(name: "threaddesk-chat", targets: ["threaddesk-chat"]),
    ],
    targets: [
        .target(name: "ThreadDeskWire"),
        .target(name: "ThreadDeskKit", dependencies: ["ThreadDeskWire"]),
        .executableTarget(name: "threaddesk-chat", dependencies: ["ThreadDeskKit"]),
        .testTarget(name: "ThreadDeskKitTests", dependencies: ["ThreadDeskKit"]),
    ],
    swiftLanguageModes: [.v6]
)
