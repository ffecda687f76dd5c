// swift-tools-version:6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    // A warning in our own code fails the build (and so `scripts/test`), incremental builds too.
    // SwiftPM drops it for a package built as a remote dependency.
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "threaddesk",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DiscordREST", targets: ["DiscordREST"]),
        .library(name: "DiscordEmulator", targets: ["DiscordEmulator"]),
        .executable(name: "discord-emulator", targets: ["discord-emulator"]),
        .executable(name: "threaddesk", targets: ["threaddesk"]),
        .executable(name: "threaddesk-gateway", targets: ["threaddesk-gateway"]),
        .executable(name: "apns-emulator", targets: ["apns-emulator"]),
        .executable(name: "assist-emulator", targets: ["assist-emulator"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        // The zips of dSYM bundles a developer uploads for crash reports.
        .package(url: "https://github.com/weichsel/ZIPFoundation.git", from: "0.9.20"),
        // Tracing (off by default): the API in the features, OpenTelemetry's OTLP/HTTP exporter
        // behind it (not its gRPC one: no gRPC stack in the build).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.2.0"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // The client SDK: the server builds on its wire types, so the two cannot drift apart.
        .package(path: "Clients/ThreadDeskKit"),
    ],
    targets: [
        .target(name: "Deadlines", swiftSettings: swiftSettings),
        // libzstd from the system (apt: libzstd-dev), for the gateway's zstd-stream.
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .target(
            name: "ZstdStream",
            dependencies: ["CZstd"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "DiscordREST",
            dependencies: [
                "Deadlines",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "DiscordEmulator",
            dependencies: [
                "Deadlines",
                "DiscordREST",
                "ZstdStream",
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ThreadDeskCore",
            dependencies: [
                "DiscordREST",
                .product(name: "ThreadDeskWire", package: "ThreadDeskKit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ThreadDeskSettings",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // Spans of a process (`Traces`: OpenTelemetry when TRACING=otlp, nothing otherwise) and the
        // W3C trace context carried between processes and through the store.
        .target(
            name: "ThreadDeskTracing",
            dependencies: [
                "ThreadDeskSettings",
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "DiscordGateway",
            dependencies: [
                "ThreadDeskSettings",
                "ThreadDeskTracing",
                "ZstdStream",
                .product(name: "CompressNIO", package: "compress-nio"),
                "Deadlines",
                "DiscordREST",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "APNs",
            dependencies: [
                "Deadlines",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "APNsEmulator",
            dependencies: [
                "Deadlines",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // A fake OpenAI-compatible chat-completions provider, for tests and the sandbox.
        .target(
            name: "AssistEmulator",
            dependencies: [
                "Deadlines",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The OpenAI-compatible chat-completions client (providers of drafted answers).
        .target(
            name: "AssistClient",
            dependencies: [
                "Deadlines",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // App Attest: the CBOR reader, attestation and assertion checks, Apple's root.
        .target(
            name: "AppAttest",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        // A device's App Attest in software, for tests and the sandbox (its own root, never Apple's).
        .target(
            name: "SoftwareAttester",
            dependencies: [
                "AppAttest",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ThreadDeskStore",
            dependencies: [
                "Deadlines",
                "DiscordREST",
                "ThreadDeskCore",
                .product(name: "ThreadDeskWire", package: "ThreadDeskKit"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ThreadDeskServer",
            dependencies: [
                "AppAttest",
                "AssistClient",
                "ThreadDeskTracing",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                "ThreadDeskSettings",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                "Deadlines",
                "APNs",
                "DiscordGateway",
                "ThreadDeskCore",
                "ThreadDeskStore",
                "DiscordREST",
                .product(name: "ThreadDeskWire", package: "ThreadDeskKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            resources: [.embedInCode("Resources/openapi.yaml")],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "threaddesk",
            dependencies: [
                "SoftwareAttester",
                "ThreadDeskTracing",
                "ThreadDeskServer",
                "ThreadDeskStore",
                "ThreadDeskCore",
                "DiscordEmulator",
                "DiscordGateway",
                "APNs",
                "APNsEmulator",
                "AssistEmulator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            resources: [
                .embedInCode("Sandbox/console.html"), .embedInCode("Sandbox/widget.html"), .embedInCode("Sandbox/sandbox.css"),
                .embedInCode("Sandbox/Crash/MyShop.dwarf"), .embedInCode("Sandbox/Crash/sample-crash.json"),
            ],
            swiftSettings: swiftSettings
        ),
        // bench/apns.py: pushes/s of one APNsClient against the APNs emulator, beside aioapns.
        // The gateway daemon alone: a small binary for a small VM (`threaddesk gateway` is the same
        // daemon inside the all-in-one executable).
        .executableTarget(
            name: "threaddesk-gateway",
            dependencies: ["DiscordGateway", "ThreadDeskSettings"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "apns-bench",
            dependencies: ["APNs", .product(name: "Logging", package: "swift-log")],
            path: "bench/apns-bench",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "apns-emulator",
            dependencies: [
                "APNsEmulator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "assist-emulator",
            dependencies: [
                "AssistEmulator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "discord-emulator",
            dependencies: [
                "DiscordEmulator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DiscordEmulatorTests",
            dependencies: [
                "DiscordEmulator",
                "TestSupport",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "DiscordREST",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DiscordRESTTests",
            dependencies: [
                "DiscordREST",
                "TestSupport",
                "DiscordEmulator",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Sets the tests' width when the test binary loads (`swift test` runs eight at once).
        .target(name: "TestWidth", path: "Tests/TestWidth"),
        .target(
            name: "TestSupport",
            dependencies: [
                "Deadlines", "TestWidth",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DiscordGatewayTests",
            dependencies: [
                "DiscordGateway", "DiscordREST", "DiscordEmulator", "TestSupport", "ZstdStream",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "APNsTests",
            dependencies: [
                "APNs",
                "TestSupport",
                "APNsEmulator",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AssistEmulatorTests",
            dependencies: [
                "AssistEmulator",
                "Deadlines",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AssistClientTests",
            dependencies: [
                "AssistClient",
                "AssistEmulator",
                "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AppAttestTests",
            dependencies: [
                "AppAttest", "SoftwareAttester", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ThreadDeskCoreTests",
            dependencies: ["ThreadDeskCore", "DiscordREST", "TestSupport", .product(name: "ThreadDeskWire", package: "ThreadDeskKit")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ThreadDeskStoreTests",
            dependencies: [
                "ThreadDeskStore", "ThreadDeskCore", "TestSupport", "Deadlines", "DiscordREST",
                .product(name: "ThreadDeskWire", package: "ThreadDeskKit"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SDKIntegrationTests",
            dependencies: [
                "SoftwareAttester",
                .product(name: "GRDB", package: "GRDB.swift"),
                "APNsEmulator",
                "TestSupport",
                "ThreadDeskServer",
                "ThreadDeskStore",
                "DiscordEmulator",
                "DiscordREST",
                "ThreadDeskCore",
                .product(name: "ThreadDeskKit", package: "ThreadDeskKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ThreadDeskServerTests",
            dependencies: [
                "AppAttest",
                "ThreadDeskSettings",
                "AssistClient",
                "AssistEmulator",
                "ThreadDeskTracing",
                "SoftwareAttester",
                "APNsEmulator",
                "TestSupport",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "DiscordGateway",
                "ThreadDeskServer",
                "ThreadDeskStore",
                "ThreadDeskCore",
                .product(name: "ThreadDeskWire", package: "ThreadDeskKit"),
                "DiscordEmulator",
                "DiscordREST",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
