import Foundation

/// Crash reports: whether dSYMs can turn their frames into functions and lines here.
extension Doctor {
    public func crashChecks() -> [DoctorCheck] {
        let settings = configuration.crashes
        guard settings.takesDSYMs else {
            return [
                DoctorCheck(
                    "crashes",
                    passed: "reports taken; no dSYM uploads (DSYMS_SECRET unset): frames show binaries and offsets, grouped by them")
            ]
        }
        guard let path = settings.symbolizerPath else {
            return [
                DoctorCheck(
                    "crashes.symbolizer", failed: "dSYMs are configured (DSYMS_SECRET) but no llvm-symbolizer was found",
                    fix: "install the Swift toolchain (it ships llvm-symbolizer) or Debian's llvm, or set SYMBOLIZER_PATH")
            ]
        }
        guard FileManager.default.isExecutableFile(atPath: path) else {
            return [
                DoctorCheck(
                    "crashes.symbolizer", failed: "SYMBOLIZER_PATH \(path) is not an executable file",
                    fix: "point SYMBOLIZER_PATH at llvm-symbolizer (the Swift toolchain's: <toolchain>/usr/bin/llvm-symbolizer)")
            ]
        }
        return [DoctorCheck("crashes.symbolizer", passed: "\(path); dSYM uploads on (POST /internal/dsyms)")]
    }
}
