import DiscordREST

/// The fields of one diagnostic, each read with the path an error names ("crashDiagnostics[0]
/// .callStackTree.callStacks[2]…"): a developer whose report was refused learns where.
enum MetricKitReader {
    static func diagnostic(_ value: JSON, kind: CrashDiagnostic.Kind, path: String) throws(CrashPayloadError) -> CrashDiagnostic {
        let members = try object(value, path: path)
        let metaPath = path + ".diagnosticMetaData"
        let meta = try members["diagnosticMetaData"].flatMap { value throws(CrashPayloadError) in
            value.isNull ? nil : try object(value, path: metaPath)
        } ?? [:]
        func text(_ key: String) throws(CrashPayloadError) -> String? {
            try Self.text(meta[key], path: metaPath + "." + key)
        }
        func integer(_ key: String) throws(CrashPayloadError) -> Int? {
            try Self.integer(meta[key], path: metaPath + "." + key)
        }
        var diagnostic = CrashDiagnostic(
            kind: kind, appVersion: try text("appVersion"), appBuild: try text("appBuildVersion"),
            osVersion: try text("osVersion"), deviceType: try text("deviceType"),
            architecture: try text("platformArchitecture"), bundleID: try text("bundleIdentifier"),
            exceptionType: try integer("exceptionType"), exceptionCode: try integer("exceptionCode"),
            signal: try integer("signal"), terminationReason: try text("terminationReason"),
            hangDuration: try textOrNumber(meta["hangDuration"], path: metaPath + ".hangDuration")
        )
        if let tree = members["callStackTree"], !tree.isNull {
            diagnostic.threads = try threads(tree, path: path + ".callStackTree")
        }
        return diagnostic
    }

    /// Each call stack a thread, the attributed first. A stack's root frame is its top; its
    /// first sub-frame is its caller, and so on down: the chain is walked, never recursed into.
    static func threads(_ value: JSON, path: String) throws(CrashPayloadError) -> [CrashThread] {
        let tree = try object(value, path: path)
        guard let stacks = tree["callStacks"], !stacks.isNull else { return [] }
        guard case .array(let items) = stacks else {
            throw CrashPayloadError("`\(path).callStacks` is not an array.")
        }
        var threads: [CrashThread] = []
        for (index, item) in items.prefix(MetricKitPayload.maxThreads).enumerated() {
            let stackPath = "\(path).callStacks[\(index)]"
            let stack = try object(item, path: stackPath)
            let attributed: Bool
            switch stack["threadAttributed"] {
            case nil, .null?: attributed = false
            case .bool(let value)?: attributed = value
            default: throw CrashPayloadError("`\(stackPath).threadAttributed` is not true or false.")
            }
            var frames: [CrashFrame] = []
            if let roots = stack["callStackRootFrames"], !roots.isNull {
                guard case .array(let rootFrames) = roots else {
                    throw CrashPayloadError("`\(stackPath).callStackRootFrames` is not an array.")
                }
                var current = rootFrames.first
                var depth = 0
                while let frame = current, frames.count < MetricKitPayload.maxFrames {
                    let framePath = "\(stackPath).callStackRootFrames[0]" + (depth == 0 ? "" : " (frame \(depth))")
                    let members = try object(frame, path: framePath)
                    frames.append(try self.frame(members, path: framePath))
                    switch members["subFrames"] {
                    case nil, .null?: current = nil
                    case .array(let callers)?: current = callers.first
                    default: throw CrashPayloadError("`\(framePath).subFrames` is not an array.")
                    }
                    depth += 1
                }
            }
            threads.append(CrashThread(attributed: attributed, frames: frames))
        }
        // Stable: the attributed thread first, the others in the report's order.
        return threads.filter(\.attributed) + threads.filter { !$0.attributed }
    }

    static func frame(_ members: [String: JSON], path: String) throws(CrashPayloadError) -> CrashFrame {
        guard let offset = try unsigned(members["offsetIntoBinaryTextSegment"], path: path + ".offsetIntoBinaryTextSegment") else {
            throw CrashPayloadError("`\(path)` has no `offsetIntoBinaryTextSegment`.")
        }
        return CrashFrame(
            binaryName: try text(members["binaryName"], path: path + ".binaryName"),
            binaryUUID: try text(members["binaryUUID"], path: path + ".binaryUUID").flatMap(CrashFrame.canonicalUUID),
            offset: offset,
            address: try unsigned(members["address"], path: path + ".address")
        )
    }

    static func object(_ value: JSON, path: String) throws(CrashPayloadError) -> [String: JSON] {
        guard case .object(let members) = value else {
            throw CrashPayloadError("`\(path)` is not an object.")
        }
        return members
    }

    /// A text kept short and free of control characters (it is shown to agents and stored).
    static func text(_ value: JSON?, path: String) throws(CrashPayloadError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return cleaned(text)
        default: throw CrashPayloadError("`\(path)` is not a string.")
        }
    }

    static func textOrNumber(_ value: JSON?, path: String) throws(CrashPayloadError) -> String? {
        switch value {
        case .number(let number)?: return number.rounded() == number && number.magnitude < 1e15 ? String(Int(number)) : String(number)
        case .integer(let number)?: return String(number)
        default: return try text(value, path: path)
        }
    }

    static func cleaned(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars where !ControlCharacters.isRefused(scalar) {
            scalars.append(scalar == "\n" || scalar == "\r" || scalar == "\t" ? " " : scalar)
        }
        return String(String(scalars).prefix(MetricKitPayload.maxText))
    }

    static func integer(_ value: JSON?, path: String) throws(CrashPayloadError) -> Int? {
        switch value {
        case nil, .null?: return nil
        case .integer(let number)?: return Int(number)
        case .number(let number)?:
            guard let integer = Int(exactly: number) else { throw CrashPayloadError("`\(path)` is not a whole number.") }
            return integer
        default: throw CrashPayloadError("`\(path)` is not a number.")
        }
    }

    static func unsigned(_ value: JSON?, path: String) throws(CrashPayloadError) -> UInt64? {
        switch value {
        case nil, .null?: return nil
        case .integer(let number)?:
            guard number >= 0 else { throw CrashPayloadError("`\(path)` is negative.") }
            return UInt64(number)
        case .number(let number)?:
            guard number >= 0 else { throw CrashPayloadError("`\(path)` is negative.") }
            guard let unsigned = UInt64(exactly: number) else { throw CrashPayloadError("`\(path)` is not a whole number that fits 64 bits.") }
            return unsigned
        default: throw CrashPayloadError("`\(path)` is not a number.")
        }
    }
}
