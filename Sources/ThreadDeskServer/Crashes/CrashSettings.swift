import Foundation
import ThreadDeskSettings

/// Crash reports' settings (`SYMBOLIZER_PATH`, `DSYMS_SECRET`, `DSYM_MAX_MIB`, `DSYM_CACHE_DIR`,
/// `CRASH_FIXED_MESSAGE`). Reports are taken without any of them; dSYMs make them readable.
/// Printed or dumped, the secret shows as `<set>` or `<unset>`, never itself.
public struct CrashSettings: Sendable, CustomStringConvertible, CustomReflectable {
    /// `llvm-symbolizer`: found on the PATH or beside Swift when not given; nil when nowhere
    /// (reports then group by offsets, and the doctor says so when dSYMs are configured).
    public var symbolizerPath: String? = Symbolizer.locate()
    /// Enables `POST /internal/dsyms` (and `threaddesk admin dsyms upload`) with this bearer secret.
    public var dsymsSecret: String?
    /// The largest dSYM upload, unpacked (zip bombs stop there).
    public var maxDSYMBytes = 512 * 1024 * 1024
    /// Where each replica writes the dSYMs it reads (kept in the store, written here once).
    public var cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("threaddesk-dsyms", isDirectory: true).path
    /// What a rule (`/crash fixed`) answers a user of an older version; `{version}` is the fixed one.
    public var fixedMessage = "This crash is fixed in {version}; please update from the App Store."

    public init() {}

    /// The rule's answer for a crash fixed in `version`.
    func answer(fixedIn version: String) -> String {
        fixedMessage.replacingOccurrences(of: "{version}", with: version)
    }

    /// Whether dSYMs are configured (their upload route is on).
    public var takesDSYMs: Bool { dsymsSecret != nil }

    private var shownSecret: String { dsymsSecret == nil ? "<unset>" : "<set>" }

    public var description: String {
        "CrashSettings(symbolizer \(symbolizerPath ?? "none"), dSYMs secret \(shownSecret), max \(maxDSYMBytes) bytes)"
    }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "symbolizerPath": symbolizerPath as Any, "dsymsSecret": shownSecret, "maxDSYMBytes": maxDSYMBytes,
                "cacheDirectory": cacheDirectory, "fixedMessage": fixedMessage,
            ])
    }

    mutating func read(_ value: (String) -> String?, problem: inout ConfigurationProblem) {
        if let path = value("SYMBOLIZER_PATH") { symbolizerPath = path.isEmpty || path == "off" ? nil : path }
        dsymsSecret = value("DSYMS_SECRET")
        if let secret = dsymsSecret, secret.utf8.count < 16 || !secret.utf8.allSatisfy({ (0x21..<0x7F).contains($0) }) {
            problem.invalid.append("DSYMS_SECRET (at least 16 visible ASCII characters: it lets a build upload dSYMs)")
        }
        if let text = value("DSYM_MAX_MIB") {
            if let number = Int(text), (1...900).contains(number) { maxDSYMBytes = number * 1024 * 1024 } else { problem.invalid.append("DSYM_MAX_MIB (1 to 900: a slice is kept whole in the store, whose values stop at 1 GB)") }
        }
        if let directory = value("DSYM_CACHE_DIR"), !directory.isEmpty { cacheDirectory = directory }
        if let message = value("CRASH_FIXED_MESSAGE") {
            if (1...1000).contains(message.count), message.contains("{version}") {
                fixedMessage = message
            } else {
                problem.invalid.append("CRASH_FIXED_MESSAGE (1 to 1000 characters with {version} in it)")
            }
        }
    }
}
