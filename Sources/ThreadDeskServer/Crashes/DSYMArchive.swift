import Foundation
import ZIPFoundation

/// What a developer uploads for a build: one Mach-O (a dSYM's DWARF file, as is) or a zip of
/// `*.dSYM` bundles, as Xcode's archives hold them, whose `Contents/Resources/DWARF/*` files are the
/// binaries. The zip comes from outside: what it unpacks to is counted as it is read, past `limit`
/// bytes in all it is refused (a zip bomb lies about sizes in its headers), other entries are left
/// unread, and a path that climbs out or starts at the root refuses the whole archive.
enum DSYMArchive {
    struct Failure: Error, Sendable, CustomStringConvertible {
        let reason: String
        init(_ reason: String) { self.reason = reason }
        var description: String { reason }
    }

    /// Entries read from one zip at most (a central directory of millions costs time to walk).
    static let maxEntries = 10_000

    static func binaries(in data: Data, limit: Int) throws -> [(name: String, data: Data)] {
        let magic = data.prefix(4)
        if magic.elementsEqual([0x50, 0x4B, 0x03, 0x04]) || magic.elementsEqual([0x50, 0x4B, 0x05, 0x06]) {
            return try fromZip(data, limit: limit)
        }
        guard isMachO(magic) else {
            throw Failure("The upload is neither a Mach-O file (a dSYM's DWARF file) nor a zip of .dSYM bundles.")
        }
        guard data.count <= limit else { throw Failure("The upload is larger than \(limit) bytes.") }
        return [(name: "binary", data: data)]
    }

    static func isMachO(_ magic: Data) -> Bool {
        let known: [[UInt8]] = [
            [0xFE, 0xED, 0xFA, 0xCE], [0xFE, 0xED, 0xFA, 0xCF], [0xCE, 0xFA, 0xED, 0xFE], [0xCF, 0xFA, 0xED, 0xFE],
            [0xCA, 0xFE, 0xBA, 0xBE], [0xCA, 0xFE, 0xBA, 0xBF],
        ]
        return known.contains { magic.elementsEqual($0) }
    }

    static func fromZip(_ data: Data, limit: Int) throws -> [(name: String, data: Data)] {
        let archive: Archive
        do {
            archive = try Archive(data: data, accessMode: .read)
        } catch {
            throw Failure("The zip cannot be read (\(error)).")
        }
        var binaries: [(name: String, data: Data)] = []
        var total = 0
        var seen = 0
        for entry in archive {
            seen += 1
            guard seen <= maxEntries else { throw Failure("The zip holds more than \(maxEntries) entries.") }
            let path = entry.path
            let components = path.split(separator: "/", omittingEmptySubsequences: false)
            guard !path.hasPrefix("/"), !path.contains("\\"), !path.contains("\0"),
                !components.contains(where: { $0 == ".." })
            else { throw Failure("The zip holds a path that leaves it: \(path.prefix(200)).") }
            guard entry.type == .file, let name = dwarfName(components) else { continue }
            guard entry.uncompressedSize <= UInt64(limit - total) else {
                throw Failure("The dSYMs unpack to more than \(limit) bytes.")
            }
            var contents = Data()
            do {
                _ = try archive.extract(entry, skipCRC32: false) { chunk in
                    guard chunk.count <= limit - total - contents.count else { throw Failure("The dSYMs unpack to more than \(limit) bytes.") }
                    contents.append(chunk)
                }
            } catch let failure as Failure {
                throw failure
            } catch {
                throw Failure("The zip's entry \(path.prefix(200)) cannot be read (\(error)).")
            }
            total += contents.count
            binaries.append((name: name, data: contents))
        }
        guard !binaries.isEmpty else {
            throw Failure("The zip holds no .dSYM bundle (no …/X.dSYM/Contents/Resources/DWARF/ file).")
        }
        return binaries
    }

    /// The binary's name when the path is `…/X.dSYM/Contents/Resources/DWARF/name` (not macOS's
    /// `__MACOSX/` resource forks).
    static func dwarfName(_ components: [Substring]) -> String? {
        guard components.count >= 5, components.first != "__MACOSX" else { return nil }
        let tail = components.suffix(5)
        let parts = Array(tail)
        guard parts[0].hasSuffix(".dSYM"), parts[1] == "Contents", parts[2] == "Resources", parts[3] == "DWARF",
            !parts[4].isEmpty, !parts[4].hasPrefix("._")
        else { return nil }
        return String(parts[4])
    }
}
