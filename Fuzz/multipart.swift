// Fuzz target: the emulator's multipart/form-data reader, which takes whatever a client uploads.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMultipart(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    _ = MultipartForm.boundary(contentType: String(decoding: data.prefix(80), as: UTF8.self))
    if let form = MultipartForm(body: data, boundary: "fuzzboundary") {
        for part in form.parts { precondition(part.data.count <= count, "a part is larger than the body") }
    }
    return 0
}
