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

    /// A file saved from the app opens as what it was checked and served as.
    @Test(arguments: [
        ("x.html", "text/plain", "x.html.txt"), ("x.svg", "text/plain", "x.svg.txt"), ("a.JS", "text/plain", "a.JS.txt"),
        ("m.mjs", "application/json", "m.mjs.json"), ("p.xhtml", "text/plain", "p.xhtml.txt"), ("f.xml", "text/plain; charset=utf-8", "f.xml.txt"),
        ("old.htm", "application/zip", "old.htm.zip"), ("fake.png", "text/plain", "fake.png.txt"), ("shot.png", "image/jpeg", "shot.png.jpg"),
        ("x.html", "application/x-unknown", "x.html.bin"),
        ("notes.txt", "text/plain", "notes.txt"), ("crash.log", "Text/Plain", "crash.log"), ("photo.JPEG", "image/jpeg", "photo.JPEG"),
        ("live.heic", "image/heif", "live.heic"), ("page.html", "text/html", "page.html"), ("README", "text/plain", "README"),
        ("report.ips", "text/plain", "report.ips"), ("trailing.", "text/plain", "trailing."),
    ])
    func aNamesExtensionAgreesWithItsType(name: String, type: String, expected: String) {
        #expect(AttachmentRules.filename(name, agreeingWith: type) == expected)
    }

    @Test func filesWithoutATypeAreTakenForWhatTheirExtensionSays() {
        #expect(AttachmentRules.type(byExtensionOf: "a.PNG") == "image/png")
        #expect(AttachmentRules.type(byExtensionOf: "a.log") == "text/plain")
        #expect(AttachmentRules.type(byExtensionOf: "a.html") == "text/html")
        #expect(!AttachmentRules.isAllowed(AttachmentRules.type(byExtensionOf: "a.svg") ?? "", in: AttachmentRules.defaultTypes))
        #expect(AttachmentRules.type(byExtensionOf: "noextension") == nil)
    }

    /// RFC 6266 with RFC 5987's `filename*`, and a fallback `filename` nothing can break out of.
    @Test func contentDispositionNamesAFileEveryClientReadsAlike() {
        #expect(AttachmentRules.contentDisposition(inline: true, filename: "shot.png") == #"inline; filename="shot.png"; filename*=UTF-8''shot.png"#)
        #expect(
            AttachmentRules.contentDisposition(inline: false, filename: "naïve «plan» (v2).txt")
                == #"attachment; filename="na_ve _plan_ (v2).txt"; filename*=UTF-8''na%C3%AFve%20%C2%ABplan%C2%BB%20%28v2%29.txt"#)
        #expect(
            AttachmentRules.contentDisposition(inline: false, filename: "a\"b\\c\r\nd;e%.txt")
                == #"attachment; filename="abcd;e%.txt"; filename*=UTF-8''a%22b%5Cc%0D%0Ad%3Be%25.txt"#)
        #expect(AttachmentRules.contentDisposition(inline: false, filename: "\"") == #"attachment; filename="file"; filename*=UTF-8''%22"#)
    }
}
