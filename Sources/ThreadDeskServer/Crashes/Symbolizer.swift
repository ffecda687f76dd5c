import DiscordREST
import Foundation
import Synchronization
import ThreadDeskCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Names the frames of the app's binaries from the developer's dSYMs with `llvm-symbolizer` (which
/// reads Mach-O DWARF and ships with the Swift toolchain), one run per batch of one binary, each
/// run killed at its deadline. Swift names come out of it mangled (`$s6MyShop…`): they are
/// demangled here, through the Swift runtime. Answers are kept by (UUID, offset): a dSYM never
/// changes under its UUID.
final class Symbolizer: Sendable {
    enum Failure: Error, Sendable, CustomStringConvertible {
        case timedOut(Duration)
        case failed(status: Int32, message: String)
        case outputTooLarge(Int)
        case unreadableOutput(String)

        var description: String {
            switch self {
            case .timedOut(let limit): "llvm-symbolizer ran past its deadline (\(limit)) and was stopped"
            case .failed(let status, let message): "llvm-symbolizer failed (status \(status)): \(message)"
            case .outputTooLarge(let limit): "llvm-symbolizer wrote more than \(limit) bytes"
            case .unreadableOutput(let reason): "llvm-symbolizer's answer could not be read: \(reason)"
            }
        }
    }

    /// Answers kept; past it the cache starts again (a full one means many builds, most old).
    static let cacheLimit = 100_000
    /// Addresses asked in one run (they are arguments: the command line stays short).
    static let batchSize = 256
    /// What one run may write.
    static let outputLimit = 8 << 20
    /// Characters kept of a function's or file's name.
    static let nameLimit = 1_000

    let path: String
    let timeout: Duration
    private let cache = Mutex<[Key: SymbolicatedFrame?]>([:])

    struct Key: Hashable {
        let uuid: String
        let offset: UInt64
    }

    init(path: String, timeout: Duration = .seconds(10)) {
        self.path = path
        self.timeout = timeout
    }

    /// `llvm-symbolizer`: the toolchain's (beside `swift` on PATH, or in /opt/swift/usr/bin) before
    /// another on PATH or /usr/bin, since the toolchain's reads what its compiler writes.
    static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let directories = (environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let manager = FileManager.default
        var candidates = directories.filter { manager.isExecutableFile(atPath: $0 + "/swift") }.map { $0 + "/llvm-symbolizer" }
        candidates.append("/opt/swift/usr/bin/llvm-symbolizer")
        candidates += directories.map { $0 + "/llvm-symbolizer" }
        candidates.append("/usr/bin/llvm-symbolizer")
        return candidates.first { manager.isExecutableFile(atPath: $0) }
    }

    /// One answer per offset, in order; nil where the DWARF does not know the address (`??`).
    func symbolicate(_ offsets: [UInt64], in file: URL, slice: MachOSlice) async throws -> [SymbolicatedFrame?] {
        let known = cache.withLock { cache in
            offsets.map { offset in cache[Key(uuid: slice.uuid, offset: offset)] }
        }
        var missing: [UInt64] = []
        var asked = Set<UInt64>()
        for (offset, answer) in zip(offsets, known) where answer == nil && asked.insert(offset).inserted {
            missing.append(offset)
        }
        var found: [UInt64: SymbolicatedFrame?] = [:]
        for start in stride(from: 0, to: missing.count, by: Self.batchSize) {
            let batch = Array(missing[start..<min(start + Self.batchSize, missing.count)])
            let answers = try await run(batch.map { slice.textVMAddress &+ $0 }, file: file, arch: slice.arch)
            for (offset, answer) in zip(batch, answers) { found[offset] = answer }
        }
        if !found.isEmpty {
            cache.withLock { cache in
                if cache.count + found.count > Self.cacheLimit { cache.removeAll() }
                for (offset, answer) in found { cache[Key(uuid: slice.uuid, offset: offset)] = answer }
            }
        }
        return zip(offsets, known).map { offset, answer in answer ?? found[offset] ?? nil }
    }

    private func run(_ addresses: [UInt64], file: URL, arch: String) async throws -> [SymbolicatedFrame?] {
        var arguments = ["--output-style=JSON", "--obj=\(file.path)"]
        if !arch.isEmpty, !arch.hasPrefix("cpu") { arguments += ["--default-arch", arch] }
        arguments += addresses.map { "0x" + String($0, radix: 16) }
        let output = try await BoundedProcess.run(path, arguments, timeout: timeout, outputLimit: Self.outputLimit)
        return try Self.parse(output, count: addresses.count)
    }

    /// `[{"Address":…,"Symbol":[{"FunctionName":…,"FileName":…,"Line":…},…]},…]` (or one object a
    /// line, as older versions write): the first (innermost inlined) symbol of each address.
    static func parse(_ output: Data, count: Int) throws -> [SymbolicatedFrame?] {
        var entries: [JSON]
        if let document = try? JSON.parse(output), case .array(let list) = document {
            entries = list
        } else {
            entries = []
            for line in output.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
                guard let entry = try? JSON.parse(Data(line)) else { throw Failure.unreadableOutput("a line is not JSON") }
                entries.append(entry)
            }
        }
        guard entries.count == count else {
            throw Failure.unreadableOutput("\(entries.count) answers for \(count) addresses")
        }
        return entries.map { entry in
            guard let symbol = entry["Symbol"]?[0], let mangled = symbol["FunctionName"]?.stringValue,
                !mangled.isEmpty, mangled != "??"
            else { return nil }
            let file = symbol["FileName"]?.stringValue.flatMap { $0.isEmpty || $0 == "??" ? nil : String($0.prefix(nameLimit)) }
            let line = symbol["Line"]?.intValue.flatMap { $0 > 0 ? $0 : nil }
            return SymbolicatedFrame(function: String(demangle(mangled).prefix(nameLimit)), file: file, line: line)
        }
    }

    /// A Swift symbol as people read it ("MyShop.CheckoutView.submit() -> ()"); other names as they are.
    static func demangle(_ name: String) -> String {
        let prefixes = ["$s", "_$s", "$S", "_$S", "$e", "_$e", "_T0"]
        guard prefixes.contains(where: name.hasPrefix) else { return name }
        return name.utf8CString.withUnsafeBufferPointer { buffer in
            guard let demangled = swiftDemangle(buffer.baseAddress, buffer.count - 1, nil, nil, 0) else { return name }
            defer { free(demangled) }
            return String(cString: demangled)
        }
    }
}

/// The Swift runtime's demangler (what `swift demangle` uses): a malloc'd C string, or nil.
@_silgen_name("swift_demangle")
private func swiftDemangle(
    _ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: Int, _ outputBuffer: UnsafeMutablePointer<CChar>?,
    _ outputBufferSize: UnsafeMutablePointer<Int>?, _ flags: UInt32
) -> UnsafeMutablePointer<CChar>?

/// One run of a tool with a deadline: killed (SIGKILL) when the deadline passes or the caller is
/// cancelled, and then awaited for at most `reapLimit` more. Its output goes to files, not pipes,
/// so a full pipe can never stall it or us, and a killed script's children cannot hold a read
/// open; what it wrote is read back up to a limit.
enum BoundedProcess {
    /// How long a killed run is awaited: SIGKILL ends it at once unless the kernel holds it.
    static let reapLimit = Duration.seconds(5)

    static func run(_ path: String, _ arguments: [String], timeout: Duration, outputLimit: Int) async throws -> Data {
        let manager = FileManager.default
        let directory = manager.temporaryDirectory.appendingPathComponent("symbolizer-" + UUID().uuidString)
        try manager.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? manager.removeItem(at: directory) }
        let outputURL = directory.appendingPathComponent("out"), errorURL = directory.appendingPathComponent("err")
        guard manager.createFile(atPath: outputURL.path, contents: nil), manager.createFile(atPath: errorURL.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown)
        }
        let output = try FileHandle(forWritingTo: outputURL), errors = try FileHandle(forWritingTo: errorURL)
        defer {
            try? output.close()
            try? errors.close()
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        let exit = ExitSignal()
        process.terminationHandler = { _ in exit.fire() }
        try process.run()
        let pid = process.processIdentifier
        // Not cancellable itself: a cancelled caller kills the run, and its end ends the wait.
        let ended = await withTaskCancellationHandler {
            await exit.wait(upTo: timeout)
        } onCancel: {
            exit.kill(pid, of: process)
        }
        if !ended || Task.isCancelled {
            exit.kill(pid, of: process)
            _ = await exit.wait(upTo: reapLimit)
        }
        try Task.checkCancellation()
        if !ended { throw Symbolizer.Failure.timedOut(timeout) }
        if process.terminationStatus != 0 || process.terminationReason != .exit {
            let message = (try? FileHandle(forReadingFrom: errorURL).read(upToCount: 2_000)) ?? Data()
            throw Symbolizer.Failure.failed(
                status: process.terminationStatus,
                message: ControlCharacters.shown(String(decoding: message, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            )
        }
        let reader = try FileHandle(forReadingFrom: outputURL)
        defer { try? reader.close() }
        let data = try reader.read(upToCount: outputLimit + 1) ?? Data()
        guard data.count <= outputLimit else { throw Symbolizer.Failure.outputTooLarge(outputLimit) }
        return data
    }

    /// The process's end (its termination handler), awaited with a deadline by any number of waiters;
    /// a wait that starts after it returns at once.
    final class ExitSignal: Sendable {
        private struct State {
            var exited = false
            var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
            var nextWaiter: UInt64 = 0
        }

        private let state = Mutex(State())

        func fire() {
            let waiters = state.withLock { state in
                state.exited = true
                defer { state.waiters = [:] }
                return state.waiters.values
            }
            for waiter in waiters { waiter.resume(returning: true) }
        }

        /// SIGKILL to `pid` only while it is still this run's: Foundation reaps the child before it
        /// calls the termination handler and then marks the process not running, so once either
        /// happened the number may already be another process's. Checked under the lock `fire()`
        /// takes, so the handler cannot slip in between the check and the signal. What remains is the
        /// instant between the reap and either mark, and a number is handed out again only after
        /// the kernel has gone through all the others.
        func kill(_ pid: pid_t, of process: Process) {
            state.withLock { state in
                guard pid > 0, !state.exited, process.isRunning else { return }
                #if canImport(Glibc)
                _ = Glibc.kill(pid, SIGKILL)
                #else
                _ = Darwin.kill(pid, SIGKILL)
                #endif
            }
        }

        /// True once the process ended; false when `limit` passed first. Ends at its deadline
        /// whatever the process does, and is not cut short by cancellation (the caller kills first).
        func wait(upTo limit: Duration) async -> Bool {
            await withCheckedContinuation { continuation in
                let id: UInt64? = state.withLock { state in
                    if state.exited { return nil }
                    state.nextWaiter += 1
                    state.waiters[state.nextWaiter] = continuation
                    return state.nextWaiter
                }
                guard let id else { return continuation.resume(returning: true) }
                let (seconds, attoseconds) = limit.components
                let nanoseconds = max(0, min(seconds, 1 << 32) * 1_000_000_000 + attoseconds / 1_000_000_000)
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
                    let waiter = self.state.withLock { $0.waiters.removeValue(forKey: id) }
                    waiter?.resume(returning: false)
                }
            }
        }
    }
}
