import Foundation
import ThreadDeskCore

/// One diagnostic as ThreadDesk understood it: the frames its dSYMs name, the binaries of the
/// app still waiting for theirs, and the signature that groups it. Kept with the report (its
/// `detail`) so that a later dSYM, a note or an export reads it again without the payload.
struct CrashReading: Sendable, Codable, Hashable {
    var diagnostic: CrashDiagnostic
    /// By the frame's index in the attributed thread (`diagnostic.threads[0]`).
    var symbols: [Int: SymbolicatedFrame]
    /// The frames that are the app's own (their indexes in the attributed thread).
    var appFrames: [Int]
    /// UUIDs of the app's binaries with no dSYM yet.
    var awaiting: [String]
    var signature: String
    /// What a rule did with the report (kept, so a later edit of its note says it still).
    var ruling: CrashNote.Ruling?

    var signatureHash: String { CrashSignature.hash(signature) }
    var kind: String { diagnostic.kind.rawValue }
    var version: String { diagnostic.appVersion ?? "?" }
    var build: String { diagnostic.appBuild ?? "" }
    var isSymbolicated: Bool { !symbols.isEmpty }

    /// "EXC_BAD_ACCESS (SIGSEGV) · CheckoutView.submit()": what lists show of its group.
    var title: String {
        let frames = diagnostic.threads.first?.frames ?? []
        let top = appFrames.first.map { index in
            symbols[index].map { Self.short($0.function) } ?? frames[index].offsetName
        } ?? frames.first?.offsetName
        return MessageText.clip(([cause] + (top.map { [$0] } ?? [])).joined(separator: " · "), limit: 200)
    }

    /// The exception and signal, or the hang's duration.
    var cause: String {
        switch diagnostic.kind {
        case .hang:
            return "Hang" + (diagnostic.hangDuration.map { " (\($0))" } ?? "")
        case .crash:
            let exception = diagnostic.exceptionName ?? diagnostic.exceptionType.map { "exception \($0)" }
            let signal = diagnostic.signalName ?? diagnostic.signal.map { "signal \($0)" }
            switch (exception, signal) {
            case let (exception?, signal?): return "\(exception) (\(signal))"
            case let (exception?, nil): return exception
            case let (nil, signal?): return signal
            case (nil, nil): return "Crash"
            }
        }
    }

    /// A function's name without its module and signature's tail, for one line: "CheckoutView.submit()".
    static func short(_ function: String) -> String {
        var name = function
        if let arrow = name.range(of: " -> ") { name = String(name[..<arrow.lowerBound]) }
        if let dot = name.firstIndex(of: "."), !name[..<dot].contains("("), !name[..<dot].contains(" ") {
            name = String(name[name.index(after: dot)...])
        }
        return MessageText.clip(name, limit: 120)
    }

    /// The detail a report keeps.
    func encoded() -> String {
        (try? String(decoding: JSONEncoder().encode(self), as: UTF8.self)) ?? "{}"
    }

    static func decoded(_ detail: String) -> CrashReading? {
        try? JSONDecoder().decode(CrashReading.self, from: Data(detail.utf8))
    }
}

extension CrashFrame {
    /// "MyShop+0x1a2b": a frame no dSYM names.
    var offsetName: String { "\(binaryName ?? "?")+0x\(String(offset, radix: 16))" }
}
