import Foundation

/// `multipart/form-data` as Discord takes uploads: `payload_json`, then `files[n]`.
struct MultipartEncoder {
    let boundary = "threaddesk-" + UUID().uuidString
    let body: Data

    var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    init(payloadJSON: Data, files: [DiscordFile]) {
        var body = Data()
        func line(_ text: String) { body.append(Data((text + "\r\n").utf8)) }
        line("--\(boundary)")
        line("Content-Disposition: form-data; name=\"payload_json\"")
        line("Content-Type: application/json")
        line("")
        body.append(payloadJSON)
        line("")
        for (index, file) in files.enumerated() {
            let filename = file.filename.replacingOccurrences(of: "\"", with: "")
            line("--\(boundary)")
            line("Content-Disposition: form-data; name=\"files[\(index)]\"; filename=\"\(filename)\"")
            line("Content-Type: \(file.contentType)")
            line("")
            body.append(file.data)
            line("")
        }
        line("--\(boundary)--")
        self.body = body
    }
}
