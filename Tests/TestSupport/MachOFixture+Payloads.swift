import Foundation

extension MachOFixture {
    /// Where the device loaded each binary (a frame's address is this plus its offset).
    static let loadAddresses: [String: UInt64] = [
        "MyShop": 0x1_0400_0000, "libswiftCore.dylib": 0x1_9A00_0000, "UIKitCore": 0x1_8C00_0000,
        "dyld": 0x1_B100_0000, "libsystem_kernel.dylib": 0x1_E500_0000,
    ]
    /// System binaries' UUIDs: no dSYM for them is ever uploaded.
    public static let systemUUIDs: [String: String] = [
        "libswiftCore.dylib": "0B6E6A8C-3F7D-3A1C-9E2B-5D4C3B2A1908", "UIKitCore": "1D2C3B4A-5E6F-3071-8293-A4B5C6D7E8F9",
        "dyld": "2E3F4A5B-6C7D-3E8F-9A0B-1C2D3E4F5A6B", "libsystem_kernel.dylib": "3F4A5B6C-7D8E-3F9A-0B1C-2D3E4F5A6B7C",
    ]

    /// One crash of MyShop as MetricKit writes it: the attributed thread's top frames at `offsets`
    /// in MyShop (top first), then libswiftCore and UIKit, MyShop's `main` at `mainOffset` when
    /// given, dyld's `start`; and a second, waiting thread.
    public static func crashPayload(
        uuid: String, offsets: [UInt64], mainOffset: UInt64? = nil, appVersion: String = "4.2", build: String = "420",
        exception: Int = 1, signal: Int = 11
    ) -> Data {
        var metadata = self.metadata(uuid: uuid, appVersion: appVersion, build: build)
        metadata["exceptionType"] = exception
        metadata["exceptionCode"] = 0
        metadata["signal"] = signal
        metadata["terminationReason"] = "Namespace SIGNAL, Code \(signal) Segmentation fault: \(signal)"
        metadata["virtualMemoryRegionInfo"] = "0x8 is not in any region."
        let diagnostic: [String: Any] = [
            "version": "1.0.0",
            "diagnosticMetaData": metadata,
            "callStackTree": tree(uuid: uuid, offsets: offsets, mainOffset: mainOffset),
        ]
        return document(["crashDiagnostics": [diagnostic]])
    }

    /// One hang of MyShop's main thread, `duration` as MetricKit writes it.
    public static func hangPayload(
        uuid: String, offsets: [UInt64], mainOffset: UInt64? = nil, appVersion: String = "4.2", build: String = "420",
        duration: String = "5 sec"
    ) -> Data {
        var metadata = self.metadata(uuid: uuid, appVersion: appVersion, build: build)
        metadata["hangDuration"] = duration
        let diagnostic: [String: Any] = [
            "version": "1.0.0",
            "diagnosticMetaData": metadata,
            "callStackTree": tree(uuid: uuid, offsets: offsets, mainOffset: mainOffset),
        ]
        return document(["hangDiagnostics": [diagnostic]])
    }

    static func metadata(uuid: String, appVersion: String, build: String) -> [String: Any] {
        [
            "appVersion": appVersion, "appBuildVersion": build, "osVersion": "iPhone OS 17.2 (21C62)",
            "deviceType": "iPhone15,2", "platformArchitecture": "arm64e", "bundleIdentifier": "com.example.MyShop",
            "regionFormat": "US", "isTestFlightApp": false, "lowPowerModeEnabled": false, "pid": 4242,
        ]
    }

    static func tree(uuid: String, offsets: [UInt64], mainOffset: UInt64?) -> [String: Any] {
        var crashed: [(String, String, UInt64)] = offsets.map { ("MyShop", uuid, $0) }
        crashed += [("libswiftCore.dylib", systemUUIDs["libswiftCore.dylib"]!, 0x3_A1C4), ("UIKitCore", systemUUIDs["UIKitCore"]!, 0x1_0F3A8)]
        crashed += [("UIKitCore", systemUUIDs["UIKitCore"]!, 0x8_8D20)]
        if let mainOffset { crashed.append(("MyShop", uuid, mainOffset)) }
        crashed.append(("dyld", systemUUIDs["dyld"]!, 0x5_E4C))
        let waiting: [(String, String, UInt64)] = [
            ("libsystem_kernel.dylib", systemUUIDs["libsystem_kernel.dylib"]!, 0x1_A4C), ("libsystem_kernel.dylib", systemUUIDs["libsystem_kernel.dylib"]!, 0x5_F10),
        ]
        return [
            "callStackPerThread": true,
            "callStacks": [
                ["threadAttributed": false, "callStackRootFrames": [chain(waiting)]],
                ["threadAttributed": true, "callStackRootFrames": [chain(crashed)]],
            ],
        ]
    }

    /// The top frame, each next one its first sub-frame.
    static func chain(_ frames: [(binary: String, uuid: String, offset: UInt64)]) -> [String: Any] {
        var next: [String: Any]?
        for frame in frames.reversed() {
            var node: [String: Any] = [
                "binaryName": frame.binary, "binaryUUID": frame.uuid, "offsetIntoBinaryTextSegment": frame.offset,
                "address": (loadAddresses[frame.binary] ?? 0x1_0000_0000) + frame.offset, "sampleCount": 1,
            ]
            if let next { node["subFrames"] = [next] }
            next = node
        }
        return next ?? [:]
    }

    static func document(_ diagnostics: [String: Any]) -> Data {
        var top = diagnostics
        top["timeStampBegin"] = "2024-01-15 10:00:00"
        top["timeStampEnd"] = "2024-01-15 10:59:00"
        // Only plist-like values above: serialization cannot fail.
        return (try? JSONSerialization.data(withJSONObject: top, options: [.prettyPrinted, .sortedKeys])) ?? Data()
    }
}
