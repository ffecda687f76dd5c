// Fuzz target: the Mach-O reader of uploaded dSYMs. Hostile bytes end in an error or in slices
// it can name: never a trap, never more slices than a fat file may list, every UUID canonical.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMachO(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    guard let slices = try? MachOFile.slices(of: data) else { return 0 }
    precondition(slices.count <= MachOFile.maxSlices, "more slices than a fat file may list")
    for slice in slices {
        precondition(slice.uuid.count == 36 && slice.uuid == slice.uuid.uppercased(), "a UUID not canonical")
        precondition(!slice.arch.isEmpty, "a slice without an architecture")
    }
    return 0
}
