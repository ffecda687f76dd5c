// swift-tools-version:6.0
import PackageDescription

// ThreadDeskKit: the client SDK for ThreadDesk. No dependencies beyond Foundation
// (FoundationNetworking on Linux) and Observation, so an app adds it with one line and links
// nothing else. `ThreadDeskWire` holds the API's request, response and event types; the server
// builds on the same module, so the two cannot drift apart. `ThreadDeskUI` is a thin SwiftUI
// screen over the Kit's `SupportConversation` (empty where SwiftUI does not exist).
let package = Package(
    name: "ThreadDeskKit",
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .watchOS(.v8), .visionOS(.v1)],
    products: [
        .library(name: "ThreadDeskKit", targets: ["ThreadDeskKit"]),
        .library(name: "ThreadDeskUI", targets: ["ThreadDeskUI"]),
        .library(name: "ThreadDeskWire", targets: ["ThreadDeskWire"]),
        .executable(name: "threaddesk-chat", targets: ["threaddesk-chat"]),
    ],
    targets: [
        .target(name: "ThreadDeskWire"),
        .target(name: "ThreadDeskKit", dependencies: ["ThreadDeskWire"]),
        .target(name: "ThreadDeskUI", dependencies: ["ThreadDeskKit"]),
        .executableTarget(name: "threaddesk-chat", dependencies: ["ThreadDeskKit"]),
        // `bench/conversation.sh`: not a product, so an app depending on the Kit never builds it.
        .executableTarget(name: "conversation-bench", dependencies: ["ThreadDeskKit"], path: "Benchmarks/conversation-bench"),
        .testTarget(name: "ThreadDeskKitTests", dependencies: ["ThreadDeskKit"]),
    ],
    swiftLanguageModes: [.v6]
)

// The DocC catalog is built with swift-docc-plugin (`swift package generate-documentation`,
// scripts/test). The plugin is added only when THREADDESK_DOCS is set, so an app that adds the
// Kit resolves no dependency at all.
if Context.environment["THREADDESK_DOCS"] != nil {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}
