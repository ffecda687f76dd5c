import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import ThreadDeskCore
import ThreadDeskWire
import NIOCore
import NIOFoundationCompat

extension Request {
    /// The largest JSON body of the small requests (a message, a session, a device).
    static let smallBodyLimit = 64 * 1024

    /// The body as bytes, refusing anything over `limit` (early, from Content-Length, when it can)
    /// and anything that is not JSON.
    func jsonBytes(limit: Int) async throws -> Data {
        let type = headers[.contentType]?.lowercased() ?? ""
        guard type.hasPrefix("application/json") || type.hasPrefix("application/") && type.contains("+json") else {
            throw APIError(.unsupportedMediaType, .unsupportedMediaType, "Send the body as application/json.")
        }
        if let length = headers[.contentLength].flatMap(Int.init), length > limit { throw APIError.tooLarge(limit: limit) }
        do {
            return Data(buffer: try await body.collect(upTo: limit))
        } catch is NIOTooManyBytesError {
            throw APIError.tooLarge(limit: limit)
        }
    }

    /// The body as a JSON tree; malformed JSON and invalid UTF-8 are the client's error.
    func jsonValue(limit: Int) async throws -> (bytes: Data, value: JSON) {
        try Self.parse(try await jsonBytes(limit: limit))
    }

    private static func parse(_ bytes: Data) throws -> (bytes: Data, value: JSON) {
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw APIError.badRequest(.invalidEncoding, "The body must be UTF-8.")
        }
        do {
            return (bytes, try JSON.parse(bytes))
        } catch {
            throw APIError.badRequest(.invalidJson, "The body is not valid JSON.")
        }
    }

    /// The body as a JSON object. Anything else is refused from its first byte, before any
    /// parsing: an 8 MB array costs nothing. A body of `largeBody` bytes or more takes a slot of
    /// `gate` for `holder` as soon as that much has arrived (before more is kept); with no slot
    /// free, or one held by `holder` already, the client is told to come back. The slot is the
    /// caller's to `leave()` (after it is done with the document: the memory it bounds is held
    /// until then). `admitted`: the caller holds a slot already (the App Attest middleware read
    /// the body under it).
    /// - Parameters:
    ///   - maxDepth: How deep the document may nest (`maxDepth`; a reader of its own may take more).
    ///   - parse: Whether to build the tree (`.null` in its place when not: the caller reads the bytes itself).
    func jsonObject(
        limit: Int, gate: ConcurrencyGate, for holder: SlotHolder, admitted: Bool = false, maxDepth: Int = Self.maxDepth, parse: Bool = true
    ) async throws -> (bytes: Data, value: JSON, slot: LargeBodySlot?) {
        let type = headers[.contentType]?.lowercased() ?? ""
        guard type.hasPrefix("application/json") || type.hasPrefix("application/") && type.contains("+json") else {
            throw APIError(.unsupportedMediaType, .unsupportedMediaType, "Send the body as application/json.")
        }
        let declared = headers[.contentLength].flatMap(Int.init)
        if let declared, declared > limit { throw APIError.tooLarge(limit: limit) }
        var slot: LargeBodySlot?
        var handedOver = false
        defer { if !handedOver { slot?.leave() } }
        var body = ByteBuffer()
        body.reserveCapacity(min(declared ?? 0, Self.largeBody))
        for try await chunk in self.body {
            guard body.readableBytes + chunk.readableBytes <= limit else { throw APIError.tooLarge(limit: limit) }
            if !admitted, slot == nil, body.readableBytes + chunk.readableBytes >= Self.largeBody {
                slot = try gate.enter(holder, busy: "Other large uploads are being read; try again shortly.")
                if let declared { body.reserveCapacity(minimumWritableBytes: max(0, declared - body.readableBytes)) }
            }
            body.writeImmutableBuffer(chunk)
        }
        let bytes = Data(buffer: body)
        let first = bytes.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        guard first == UInt8(ascii: "{") else {
            throw APIError.badRequest(.notAnObject, "The body must be a JSON object.")
        }
        // Counted on the bytes before anything is built: a tree of millions of tiny values would
        // cost far more memory than the 8 MiB it came in.
        let shape = JSON.shape(of: bytes)
        guard shape.depth <= maxDepth, shape.values <= Self.maxValues else {
            throw APIError.badRequest(
                .tooComplex, "The document may nest at most \(maxDepth) levels and hold at most \(Self.maxValues) values.")
        }
        guard parse else {
            handedOver = true
            return (bytes, .null, slot)
        }
        let parsed = try Self.parse(bytes)
        handedOver = true
        return (parsed.bytes, parsed.value, slot)
    }

    static let maxDepth = 32
    static let maxValues = 200_000
    /// Bodies from this size on take a slot of the large-body gate.
    static let largeBody = 1 << 20
    /// Large bodies read and parsed at once, per server.
    static let largeBodiesAtOnce = 2

    /// The body decoded as `T`, with the failing field named in the error; a failure inside one
    /// of the fields of `invalid` gets that field's own code.
    func decode<T: Decodable>(_ type: T.Type, limit: Int, invalid: [String: ErrorCode] = [:]) async throws -> T {
        let (bytes, _) = try await jsonValue(limit: limit)
        do {
            return try JSONDecoder().decode(T.self, from: bytes)
        } catch let error as DecodingError {
            let code = error.topLevelField.flatMap { invalid[$0] } ?? .invalidBody
            throw APIError.badRequest(code, error.fieldDescription)
        }
    }

    /// `Authorization: Bearer <token>`.
    var bearerToken: String? {
        guard let value = headers[.authorization] else { return nil }
        // The usual spelling first: no lower-casing or trimming on every authenticated request.
        if value.hasPrefix("Bearer "), !value.hasSuffix(" ") {
            let token = value.dropFirst(7)
            if !token.isEmpty, token.first != " " { return String(token) }
        }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }
}

extension DecodingError {
    /// The body's field the failure is in, if any.
    var topLevelField: String? {
        let context: Context
        switch self {
        case .keyNotFound(let key, let found): return found.codingPath.first?.stringValue ?? key.stringValue
        case .typeMismatch(_, let found), .valueNotFound(_, let found), .dataCorrupted(let found): context = found
        @unknown default: return nil
        }
        return context.codingPath.first?.stringValue
    }

    /// Which field was wrong and how, without echoing the client's data back.
    var fieldDescription: String {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.isEmpty ? "the body" : codingPath.map { $0.intValue.map { "[\($0)]" } ?? ControlCharacters.named($0.stringValue) }.joined(separator: ".")
        }
        switch self {
        case .keyNotFound(let key, let context): return "\(path(context.codingPath + [key])) is required."
        case .typeMismatch(let type, let context): return "\(path(context.codingPath)) must be \(Self.describe(type))."
        case .valueNotFound(let type, let context): return "\(path(context.codingPath)) must be \(Self.describe(type)), not null."
        case .dataCorrupted(let context): return "\(path(context.codingPath)) is invalid: \(context.debugDescription)"
        @unknown default: return "The body does not have the expected shape."
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Double.Type: "a number"
        case is Bool.Type: "true or false"
        default: "an object"
        }
    }
}

/// A JSON answer.
func jsonResponse<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
    Response(
        status: status, headers: [.contentType: "application/json; charset=utf-8"],
        body: .init(byteBuffer: ByteBuffer(data: try JSONEncoder.api.encode(value))))
}
