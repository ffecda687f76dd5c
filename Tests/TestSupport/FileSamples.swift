/// Samples of every type ThreadDesk accepts by default: the shortest bytes that are that type.
public enum FileSamples {
    public static let byType: [(type: String, filename: String, bytes: [UInt8])] = [
        ("image/png", "a.png", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8) + [0, 0, 0, 2, 0, 0, 0, 3, 8, 2, 0, 0, 0]),
        ("image/jpeg", "a.jpg", [0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10] + Array("JFIF".utf8) + [0, 1, 2, 3]),
        ("image/gif", "a.gif", Array("GIF89a".utf8) + [1, 0, 1, 0, 0, 0, 0]),
        ("image/webp", "a.webp", Array("RIFF".utf8) + [20, 0, 0, 0] + Array("WEBPVP8 ".utf8) + [0, 0, 0, 0]),
        ("image/heic", "a.heic", [0, 0, 0, 24] + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)),
        ("image/heif", "a.heif", [0, 0, 0, 24] + Array("ftypmif1".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)),
        ("video/mp4", "a.mp4", [0, 0, 0, 24] + Array("ftypisom".utf8) + [0, 0, 2, 0] + Array("isomiso2".utf8)),
        ("video/quicktime", "a.mov", [0, 0, 0, 20] + Array("ftypqt  ".utf8) + [0, 0, 2, 0] + Array("qt  ".utf8)),
        ("application/pdf", "a.pdf", Array("%PDF-1.7\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\n%%EOF\n".utf8)),
        ("text/plain", "a.txt", Array("Crash at launch — ça plante\nline 2\n".utf8)),
        ("application/json", "a.json", Array(#"{"crash": true, "frames": [1, 2.5e3, -0.1, "é\u00e9\ud83d\ude00"], "none": null}"#.utf8)),
        ("application/zip", "a.zip", [0x50, 0x4B, 0x03, 0x04, 0x14, 0, 0, 0, 8, 0]),
    ]

    public static func bytes(of type: String) -> [UInt8] { byType.first { $0.type == type }!.bytes }
}
