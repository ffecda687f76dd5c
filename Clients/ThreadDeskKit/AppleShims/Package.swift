// swift-tools-version:6.2
import PackageDescription

// Compiles the Kit's Apple-only code on Linux: `#if canImport(DeviceCheck) && canImport(CryptoKit)`
// (DeviceCheckAttestProvider), `#if canImport(UserNotifications)` (SupportNotifications) and
// `#if canImport(MetricKit)` (the crash reports' subscriber) are skipped by the Kit's own Linux
// build, so a wrong signature or a missing `try`/`await` there would first show on a Mac. Here
// modules named DeviceCheck, CryptoKit, UserNotifications and MetricKit declare exactly what the
// Kit calls, with the signatures of Apple's Swift interfaces, and the Kit's real sources
// (Sources/ThreadDeskKit and Sources/ThreadDeskWire are symlinks to the Kit's folders, not
// copies) are compiled against them. `scripts/test` builds and tests it.
//
// A package of its own, not targets of the Kit's: SwiftPM puts every module of a package in one
// Modules folder, so a module named DeviceCheck there would make `canImport(DeviceCheck)` true or
// false inside ThreadDeskKit depending on build order.
//
// What it cannot check: availability. The Linux compiler ignores `@available(iOS …)`,
// `@available(macOS …)` and `unavailable` for Apple platforms, so the shims' annotations (copied
// from Apple's documentation) only document. `.github/workflows/apple.yml` builds the Kit with
// xcodebuild against the real SDKs; that is where availability is checked.
//
// Linux only: on a Mac the real frameworks exist and these modules would shadow them.
#if os(Linux)
let shimSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "AppleShims",
    targets: [
        .target(name: "DeviceCheck", swiftSettings: shimSettings),
        .target(name: "CryptoKit", swiftSettings: shimSettings),
        .target(name: "UserNotifications", swiftSettings: shimSettings),
        .target(name: "MetricKit", swiftSettings: shimSettings),
        // The Kit's own targets, built as the Kit's Package.swift builds them (its warnings are
        // held to zero by `scripts/test`'s log check, as for the Kit package).
        .target(name: "ThreadDeskWire"),
        // The explicit dependencies build the shims first, so `canImport` is true in every file.
        .target(name: "ThreadDeskKit", dependencies: ["ThreadDeskWire", "DeviceCheck", "CryptoKit", "UserNotifications", "MetricKit"]),
        .testTarget(
            name: "AppleShimsTests",
            dependencies: ["ThreadDeskKit", "ThreadDeskWire", "DeviceCheck", "CryptoKit", "UserNotifications", "MetricKit"],
            swiftSettings: shimSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
#else
// On Apple platforms no targets, so `swift build` here stops with "no buildable target": the Kit
// compiles against the real frameworks there.
let package = Package(name: "AppleShims")
#endif
