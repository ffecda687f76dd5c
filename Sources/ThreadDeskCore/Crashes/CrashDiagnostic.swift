/// One crash or hang as MetricKit reported it, frames unsymbolicated: what the server keeps,
/// groups by signature and symbolicates from the developer's dSYMs.
public struct CrashDiagnostic: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Codable { case crash, hang }

    public var kind: Kind
    public var appVersion: String?
    public var appBuild: String?
    /// "iPhone OS 17.2 (21C62)"
    public var osVersion: String?
    /// "iPhone15,2"
    public var deviceType: String?
    public var architecture: String?
    public var bundleID: String?
    public var exceptionType: Int?
    public var exceptionCode: Int?
    public var signal: Int?
    public var terminationReason: String?
    /// As MetricKit writes it ("5 sec").
    public var hangDuration: String?
    /// The attributed (crashed) thread first.
    public var threads: [CrashThread]

    public init(
        kind: Kind, appVersion: String? = nil, appBuild: String? = nil, osVersion: String? = nil, deviceType: String? = nil,
        architecture: String? = nil, bundleID: String? = nil, exceptionType: Int? = nil, exceptionCode: Int? = nil,
        signal: Int? = nil, terminationReason: String? = nil, hangDuration: String? = nil, threads: [CrashThread] = []
    ) {
        self.kind = kind
        self.appVersion = appVersion
        self.appBuild = appBuild
        self.osVersion = osVersion
        self.deviceType = deviceType
        self.architecture = architecture
        self.bundleID = bundleID
        self.exceptionType = exceptionType
        self.exceptionCode = exceptionCode
        self.signal = signal
        self.terminationReason = terminationReason
        self.hangDuration = hangDuration
        self.threads = threads
    }

    /// "EXC_BAD_ACCESS": the Mach exception's name (`<mach/exception_types.h>`, 1…13).
    public var exceptionName: String? {
        guard let exceptionType else { return nil }
        return Self.exceptionNames[exceptionType]
    }

    /// "SIGSEGV": the signal's name (Darwin's numbers, which MetricKit reports).
    public var signalName: String? {
        guard let signal else { return nil }
        return Self.signalNames[signal]
    }

    static let exceptionNames: [Int: String] = [
        1: "EXC_BAD_ACCESS", 2: "EXC_BAD_INSTRUCTION", 3: "EXC_ARITHMETIC", 4: "EXC_EMULATION", 5: "EXC_SOFTWARE",
        6: "EXC_BREAKPOINT", 7: "EXC_SYSCALL", 8: "EXC_MACH_SYSCALL", 9: "EXC_RPC_ALERT", 10: "EXC_CRASH",
        11: "EXC_RESOURCE", 12: "EXC_GUARD", 13: "EXC_CORPSE_NOTIFY",
    ]

    static let signalNames: [Int: String] = [
        1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGEMT", 8: "SIGFPE",
        9: "SIGKILL", 10: "SIGBUS", 11: "SIGSEGV", 12: "SIGSYS", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
        16: "SIGURG", 17: "SIGSTOP", 18: "SIGTSTP", 19: "SIGCONT", 20: "SIGCHLD", 21: "SIGTTIN", 22: "SIGTTOU",
        23: "SIGIO", 24: "SIGXCPU", 25: "SIGXFSZ", 26: "SIGVTALRM", 27: "SIGPROF", 28: "SIGWINCH", 29: "SIGINFO",
        30: "SIGUSR1", 31: "SIGUSR2",
    ]
}

/// One thread's stack, its top frame first.
public struct CrashThread: Sendable, Hashable, Codable {
    public var attributed: Bool
    public var frames: [CrashFrame]

    public init(attributed: Bool, frames: [CrashFrame]) {
        self.attributed = attributed
        self.frames = frames
    }
}

/// A frame as the device saw it: which binary, and where in its `__TEXT` segment.
public struct CrashFrame: Sendable, Hashable, Codable {
    public var binaryName: String?
    /// Uppercase, canonical 8-4-4-4-12; nil when the report's was not a UUID.
    public var binaryUUID: String?
    /// From the start of the binary's `__TEXT` segment.
    public var offset: UInt64
    public var address: UInt64?

    public init(binaryName: String?, binaryUUID: String?, offset: UInt64, address: UInt64? = nil) {
        self.binaryName = binaryName
        self.binaryUUID = binaryUUID
        self.offset = offset
        self.address = address
    }
}

extension CrashFrame {
    /// "6c2f7d3e-…" or "6C2F7D3E9A41…" as "6C2F7D3E-9A41-4B1C-8E55-0D3A2B1C4F60"; nil when not a UUID.
    public static func canonicalUUID(_ text: String) -> String? {
        let hex = text.unicodeScalars.filter { $0 != "-" }
        guard hex.count == 32, text.unicodeScalars.count <= 36, hex.allSatisfy({ $0.properties.isASCIIHexDigit }) else { return nil }
        let digits = String(String.UnicodeScalarView(hex)).uppercased()
        var result = ""
        for (index, character) in digits.enumerated() {
            if [8, 12, 16, 20].contains(index) { result.append("-") }
            result.append(character)
        }
        // Dashes, when there are any, stand where a UUID has them.
        guard !text.contains("-") || text.uppercased() == result else { return nil }
        return result
    }

}

/// Why a MetricKit document was refused: a sentence for the 400's message.
public struct CrashPayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { reason }
}
