import Crypto
import DiscordREST
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Prometheus
import Synchronization
import ThreadDeskCore
import ThreadDeskWire

/// A message with files, as `POST /v1/messages` takes it in `multipart/form-data`: an optional
/// `content` field and up to `maxFiles` file parts. Everything is checked before anything
/// reaches Discord; the files stay slices of the one buffer the body was read into.
struct Upload: Sendable {
    var text: String
    var files: [DiscordFile]
    var totalBytes: Int { files.reduce(0) { $0 + $1.bytes.readableBytes } }

    /// Names, types and a digest of each file's bytes: a retry with the same key must carry the same files.
    var fingerprint: String {
        files.map { file in
            let digest = file.bytes.withUnsafeReadableBytes { SHA256.hash(data: $0) }
            return "\(file.filename)\u{0}\(file.contentType)\u{0}\(digest.map { String($0, radix: 16) }.joined())"
        }.joined(separator: "\u{1}")
    }
}

final class UploadReader: Sendable {
    let settings: AttachmentSettings
    /// Large uploads in memory at once, per process.
    let gate: ConcurrencyGate
    /// Bodies being received, large or not (the `threaddesk_uploads_receiving` gauge).
    private let receiving = Atomic<Int>(0)
    let metrics: ServerMetrics

    /// - Parameter holders: Shared with the other large-body gates: one slot per user and network in all.
    init(settings: AttachmentSettings, holders: SlotHolders, metrics: ServerMetrics) {
        self.settings = settings
        self.metrics = metrics
        gate = ConcurrencyGate(limit: settings.maxConcurrentLarge, holders: holders)
    }

    /// Headers, the text field and multipart framing on top of the files.
    static let overhead = 256 * 1024
    static let textLimit = 64 * 1024

    /// `admitted`: the request holds a slot of `gate` already (taken before its body was read);
    /// otherwise a large one takes it for `holder`.
    func read(_ request: Request, boundary: String, for holder: SlotHolder, admitted: Bool = false) async throws -> Upload {
        let limit = settings.maxTotalBytes + Self.overhead
        let declared = request.headers[.contentLength].flatMap(Int.init)
        if let declared, declared > limit { throw tooLarge() }
        // A large upload takes a slot of the gate once its bytes arrive, not when it declares a
        // size: requests that declare megabytes and trickle a byte at a time hold no slot and
        // block no one (their buffer stays under `largeUpload` until then); one that does holds
        // the only slot its user (and network) may hold.
        var slot: LargeBodySlot?
        metrics.files.receiving.set(to: Double(receiving.add(1, ordering: .relaxed).newValue))
        defer {
            slot?.leave()
            metrics.files.receiving.set(to: Double(receiving.subtract(1, ordering: .relaxed).newValue))
        }
        var body = ByteBufferAllocator().buffer(capacity: min(declared ?? 64 * 1024, settings.largeUpload, limit))
        for try await chunk in request.body {
            let total = body.readableBytes + chunk.readableBytes
            guard total <= limit else { throw tooLarge() }
            if slot == nil, !admitted, total >= settings.largeUpload {
                slot = try gate.enter(holder, busy: "Other large uploads are being sent; try again shortly.")
                // The rest in one allocation of the declared size: no growing copies on the way.
                if let declared { body.reserveCapacity(minimumWritableBytes: max(0, min(declared, limit) - body.readableBytes)) }
            }
            body.writeImmutableBuffer(chunk)
        }
        let parts: [MultipartBody.Part]
        do {
            parts = try body.withUnsafeReadableBytes { try MultipartBody.parse($0, boundary: boundary, maxParts: settings.maxFiles + 4) }
        } catch let failure as MultipartBody.Failure {
            switch failure {
            case .malformed(let why): throw APIError.badRequest(.invalidMultipart, "The multipart body is malformed: \(why).")
            case .tooManyParts: throw APIError.badRequest(.tooManyFiles, "Send at most \(settings.maxFiles) files with one message.")
            }
        }
        return try upload(from: parts, in: body)
    }

    private func upload(from parts: [MultipartBody.Part], in body: ByteBuffer) throws -> Upload {
        var text: String?
        var files: [DiscordFile] = []
        for part in parts {
            let bytes = body.getSlice(at: body.readerIndex + part.range.lowerBound, length: part.range.count) ?? ByteBuffer()
            // A `files` part without a file name (what generic multipart encoders send for a
            // binary field) is a file all the same, named for its type.
            guard let filename = part.filename ?? (part.name == "files" ? "file" : nil) else {
                guard part.name == MessageForm.content, text == nil else {
                    throw APIError.badRequest(.unexpectedField, "Only a `content` field and files may be sent; got `\(String(part.name.prefix(40)))`.")
                }
                guard bytes.readableBytes <= Self.textLimit, let value = String(validating: bytes.readableBytesView, as: UTF8.self)
                else { throw APIError.badRequest(.invalidText, "content must be UTF-8 text of at most \(Self.textLimit) bytes.") }
                text = value
                continue
            }
            guard files.count < settings.maxFiles else {
                throw APIError.badRequest(.tooManyFiles, "Send at most \(settings.maxFiles) files with one message.")
            }
            files.append(try file(named: filename, declared: part.contentType, bytes: bytes))
        }
        let total = files.reduce(0) { $0 + $1.bytes.readableBytes }
        guard total <= settings.maxTotalBytes else {
            throw APIError(.contentTooLarge, .uploadTooLarge, "The files add up to \(total) bytes; the limit is \(settings.maxTotalBytes).")
        }
        let raw = text ?? ""
        let content = raw.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty && !files.isEmpty ? "" : try APIError.validText(raw)
        guard !files.isEmpty || !content.isEmpty else { throw APIError.badRequest(.emptyMessage, "Send content, files, or both.") }
        return Upload(text: content, files: files)
    }

    private func file(named raw: String, declared: String?, bytes: ByteBuffer) throws -> DiscordFile {
        let filename = AttachmentRules.sanitizedFilename(raw)
        guard bytes.readableBytes > 0 else { throw APIError.badRequest(.emptyFile, "\(filename) is empty.") }
        guard bytes.readableBytes <= settings.maxFileBytes else {
            throw APIError(
                .contentTooLarge, .fileTooLarge, "\(filename) has \(bytes.readableBytes) bytes; the limit is \(settings.maxFileBytes) per file.")
        }
        let declaredType = declared.map(AttachmentRules.mediaType) ?? ""
        let type = declaredType.isEmpty || declaredType == "application/octet-stream" ? AttachmentRules.type(byExtensionOf: filename) : declaredType
        guard let type, AttachmentRules.isAllowed(type, in: settings.allowedTypes) else {
            throw APIError(
                .unsupportedMediaType, .unsupportedFileType,
                "\(filename): \(declaredType.isEmpty ? "unknown type" : String(declaredType.prefix(80))) is not accepted; accepted: \(settings.allowedTypes.joined(separator: ", ")).")
        }
        // Every type with a rule is checked against the whole of its bytes, in place.
        let (matches, looksLike) = bytes.withUnsafeReadableBytes { raw in
            FileContent.matches(type, raw) ? (true, nil) : (false, FileContent.sniff(raw))
        }
        guard matches else {
            throw APIError(
                .unprocessableContent, .fileContentMismatch,
                "\(filename) is declared as \(type) but its bytes are \(looksLike.map { "\($0)" } ?? "not a type ThreadDesk recognizes").")
        }
        // Named as what it was checked as: a text file called `x.html` would open as a page.
        return DiscordFile(filename: AttachmentRules.filename(filename, agreeingWith: type), contentType: type, bytes: bytes)
    }

    private func tooLarge() -> APIError {
        APIError(.contentTooLarge, .uploadTooLarge, "A message's files may add up to \(settings.maxTotalBytes) bytes.")
    }
}
