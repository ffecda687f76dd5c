// Fuzz target: App Attest's CBOR reader. Hostile bytes end in an error within the reader's
// limits; whatever reads writes back out and reads to the same item.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCBOR(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let reader = CBORReader(maxBytes: 64 * 1024, maxDepth: 8, maxItems: 4096)
    guard let (item, used) = try? reader.readPrefix(bytes) else { return 0 }
    precondition(used >= 1 && used <= bytes.count, "the reader claims bytes it was not given")
    let again = try? reader.read(item.encoded)
    precondition(again == item, "CBOR does not survive a round trip")
    return 0
}
