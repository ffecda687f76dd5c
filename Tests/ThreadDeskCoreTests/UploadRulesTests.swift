import Foundation
import Testing
import ThreadDeskCore

@Suite("Uploads: the multipart reader and the file rules")
struct UploadRulesTests {
    func parse(_ text: String, boundary: String = "b", maxParts: Int = 10) throws -> [(MultipartBody.Part, String)] {
        let bytes = Array(text.utf8)
        let parts = try bytes.withUnsafeBytes { try MultipartBody.parse($0, boundary: boundary, maxParts: maxParts) }
        return parts.map { ($0, String(decoding: bytes[$0.range], as: UTF8.self)) }
    }

    @Test func readsFieldsAndFilesWithAPreambleQuotedNamesAndCRLFInContent() throws {
        let body = "preamble\r\n--b\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\nline 1\r\nline 2\r\n"
            + "--b\r\ncontent-disposition: form-data; name=\"files\"; filename=\"a \\\"quoted\\\"; name.png\"\r\nContent-Type: image/png\r\n\r\nPNG\r\n--b--\r\n"
        let parts = try parse(body)
        #expect(parts.count == 2)
        #expect(parts[0].0.name == "content" && parts[0].0.filename == nil && parts[0].1 == "line 1\r\nline 2")
        #expect(parts[1].0.filename == "a \"quoted\"; name.png" && parts[1].0.contentType == "image/png" && parts[1].1 == "PNG")
    }

    @Test func refusesWhatIsNotWellFormed() {
        let bad = [
            "no boundary at all",
            "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nnever closed",
            "--b\r\nContent-Disposition: form-data\r\n\r\nno name\r\n--b--",
            "--b\r\nContent-Disposition: attachment; name=\"x\"\r\n\r\nnot form-data\r\n--b--",
            "--bX\r\n",
        ]
        for body in bad { #expect(throws: MultipartBody.Failure.self, "\(body)") { try parse(body) } }
        let many = String(repeating: "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nx\r\n", count: 3) + "--b--"
        #expect(throws: MultipartBody.Failure.tooManyParts(2)) { try parse(many, maxParts: 2) }
    }

    @Test func takesOnlyValidBoundaries() {
        #expect(MultipartBody.boundary(contentType: "multipart/form-data; boundary=\"abc 123\"") == "abc 123")
        #expect(MultipartBody.boundary(contentType: "Multipart/Form-Data;boundary=xyz") == "xyz")
        #expect(MultipartBody.boundary(contentType: "multipart/form-data") == nil)
        #expect(MultipartBody.boundary(contentType: "multipart/form-data; boundary=" + String(repeating: "a", count: 71)) == nil)
        #expect(MultipartBody.boundary(contentType: "multipart/form-data; boundary=a\r\nb") == nil)
        #expect(MultipartBody.boundary(contentType: "application/json; boundary=x") == nil)
    }

    @Test func fileNamesLoseTheirPathControlCharactersAndLength() {
        #expect(AttachmentRules.sanitizedFilename("../../etc/passwd") == "passwd")
        #expect(AttachmentRules.sanitizedFilename("C:\\Users\\me\\shot.png") == "shot.png")
        #expect(AttachmentRules.sanitizedFilename("evil\u{202E}gnp.exe") == "evilgnp.exe")
        #expect(AttachmentRules.sanitizedFilename("a\nb<c>.txt") == "ab_c_.txt")
        #expect(AttachmentRules.sanitizedFilename("...") == "file")
        #expect(AttachmentRules.sanitizedFilename(".bashrc") == "bashrc")
        let long = AttachmentRules.sanitizedFilename(String(repeating: "x", count: 300) + ".png")
        #expect(long.count == AttachmentRules.filenameLimit && long.hasSuffix(".png"))
    }

    @Test func typesComeFromTheAllowListAndImagesMustBeWhatTheySay() {
        #expect(AttachmentRules.isAllowed("Image/PNG; q=1", in: AttachmentRules.defaultTypes))
        #expect(!AttachmentRules.isAllowed("image/svg+xml", in: AttachmentRules.defaultTypes))
        #expect(AttachmentRules.isAllowed("image/svg+xml", in: ["image/*"]))
        #expect(!AttachmentRules.isAllowed("imagexsvg", in: ["image/*"]))
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0]
        #expect(AttachmentRules.contentMatches("image/png", prefix: png))
        #expect(!AttachmentRules.contentMatches("image/jpeg", prefix: png))
        #expect(!AttachmentRules.contentMatches("image/png", prefix: Array("GIF89a".utf8)))
        #expect(AttachmentRules.contentMatches("image/heif", prefix: [0, 0, 0, 24] + Array("ftypheic".utf8)))
        #expect(AttachmentRules.contentMatches("application/pdf", prefix: Array("anything".utf8)))
    }
}
