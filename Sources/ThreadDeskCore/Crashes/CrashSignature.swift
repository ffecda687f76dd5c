import Crypto
import Foundation

/// A frame as the developer's dSYM names it.
public struct SymbolicatedFrame: Sendable, Hashable, Codable {
    /// Demangled: "MyShop.CheckoutView.submit() -> ()".
    public var function: String
    public var file: String?
    public var line: Int?

    public init(function: String, file: String? = nil, line: Int? = nil) {
        self.function = function
        self.file = file
        self.line = line
    }
}

/// What groups the reports of one bug across users and versions, so a rule set on it ("fixed in
/// 4.3") answers the next user who meets it.
public enum CrashSignature {
    /// How many of the app's frames name a crash.
    public static let frameCount = 3

    /// "crash|EXC_BAD_ACCESS|SIGSEGV|MyShop.CheckoutView.submit() -> ()|…": the kind, the exception
    /// and signal, then the top three of the app's own frames in the attributed thread (`threads[0]`):
    /// their functions when symbolicated (no lines, which move between versions), else
    /// `binary+0xoffset`. A stack without any frame of the app is named by its top three frames.
    /// `symbols` is keyed by the frame's index in `threads[0]`; `isAppFrame` says which frames are
    /// the app's (see `appFrames(dsymUUIDs:executable:)` for the rule the server uses).
    public static func of(
        _ diagnostic: CrashDiagnostic, symbols: [Int: SymbolicatedFrame], isAppFrame: (CrashFrame) -> Bool
    ) -> String {
        let frames = Array((diagnostic.threads.first?.frames ?? []).enumerated())
        var chosen = frames.filter { isAppFrame($0.element) }.prefix(frameCount)
        if chosen.isEmpty { chosen = frames.prefix(frameCount) }
        let names = chosen.map { index, frame in
            symbols[index]?.function ?? "\(frame.binaryName ?? "?")+0x\(String(frame.offset, radix: 16))"
        }
        let exception = diagnostic.exceptionName ?? diagnostic.exceptionType.map { "EXC_\($0)" } ?? ""
        let signal = diagnostic.signalName ?? diagnostic.signal.map { "SIG\($0)" } ?? ""
        return ([diagnostic.kind.rawValue, exception, signal] + names).joined(separator: "|")
    }

    /// 16 hex digits of the signature's SHA-256: short enough for a URL and a log line.
    public static func hash(_ signature: String) -> String {
        SHA256.hash(data: Data(signature.utf8)).prefix(8).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The rule for which frames are the app's: a frame is when its binary's UUID has an uploaded
    /// dSYM, or when its binary is the app's executable (`executable`, e.g. from
    /// `mainBinaryName(of:)`): a build whose dSYMs were never uploaded still groups by its own
    /// frames, not by UIKit's.
    public static func appFrames(dsymUUIDs: Set<String>, executable: String?) -> @Sendable (CrashFrame) -> Bool {
        { frame in
            if let uuid = frame.binaryUUID, dsymUUIDs.contains(uuid) { return true }
            return executable != nil && frame.binaryName == executable
        }
    }

    /// The loaders that stand below `main` at the bottom of a stack.
    static let loaders: Set<String> = ["dyld", "libdyld.dylib"]

    /// The app's executable as a report shows it: the binary of the deepest frame of the
    /// attributed thread that is not the loader's (`main` is called by dyld's `start`).
    public static func mainBinaryName(of diagnostic: CrashDiagnostic) -> String? {
        diagnostic.threads.first?.frames.last { frame in
            frame.binaryName.map { !loaders.contains($0) } ?? false
        }?.binaryName
    }
}
