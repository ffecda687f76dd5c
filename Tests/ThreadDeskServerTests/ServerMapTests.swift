import Foundation
import Testing

/// The README's map of the server is what the code does: every folder on it, each one's
/// "depends on" the folders its code names, no two folders depending on each other, and the box
/// table naming every target of the package.
@Suite struct ServerMapTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func readme() throws -> String { try String(contentsOf: repository.appendingPathComponent("README.md"), encoding: .utf8) }

    static func code() throws -> ServerMap { try ServerMap(root: repository.appendingPathComponent("Sources/ThreadDeskServer")) }

    @Test func everyFolderIsOnTheMapOnce() throws {
        let (map, code) = (ReadmeMap(readme: try Self.readme()), try Self.code())
        let named = map.rows.map(\.folder)
        #expect(!named.isEmpty, "the README has a server map")
        #expect(Set(named).count == named.count, "a folder is on the map once: \(named)")
        #expect(Set(named) == code.folders, "on the map, not in the code: \(Set(named).subtracting(code.folders).sorted()); in the code, not on the map: \(code.folders.subtracting(named).sorted())")
    }

    @Test func eachFolderDependsOnWhatTheMapSays() throws {
        let (map, code) = (ReadmeMap(readme: try Self.readme()), try Self.code())
        for (place, row) in map.rows.enumerated() {
            let actual = code.dependencies[row.folder] ?? []
            // "everything below": the composition root, which names every folder under it with code.
            let expected = row.everythingBelow ? Set(map.rows[(place + 1)...].map(\.folder)).intersection(code.declaring) : row.dependsOn
            let missing = actual.subtracting(expected).sorted().map { "\($0) (\((code.uses[row.folder]?[$0] ?? []).sorted().prefix(4).joined(separator: ", ")))" }
            let extra = expected.subtracting(actual).sorted()
            #expect(missing.isEmpty && extra.isEmpty, "\(row.folder): the code uses but the map does not say \(missing); the map says but the code does not use \(extra)")
        }
    }

    @Test func foldersDependOneWayDownTheMap() throws {
        let (map, code) = (ReadmeMap(readme: try Self.readme()), try Self.code())
        #expect(code.cycles.isEmpty, "folders that depend on each other: \(code.cycles)")
        let place = Dictionary(uniqueKeysWithValues: map.rows.enumerated().map { ($0.element.folder, $0.offset) })
        for (index, row) in map.rows.enumerated() {
            let above = (code.dependencies[row.folder] ?? []).filter { (place[$0] ?? .max) <= index }
            #expect(above.isEmpty, "\(row.folder) uses \(above.sorted()), which the map puts above it")
        }
    }

    @Test func onlyTheCompositionRootNamesEveryFeature() throws {
        let (map, code) = (ReadmeMap(readme: try Self.readme()), try Self.code())
        let roots = map.rows.filter(\.everythingBelow).map(\.folder)
        #expect(roots == ["App"], "one composition root: \(roots)")
        guard let root = map.rows.firstIndex(where: \.everythingBelow) else { return }
        let below = Set(map.rows[(root + 1)...].map(\.folder)).intersection(code.declaring)
        let naming = code.folders.filter { below.subtracting([$0]).isSubset(of: code.dependencies[$0] ?? []) }
        #expect(naming == ["App"], "folders that name every folder below the root: \(naming.sorted())")
    }

    /// The reading itself: a test that could not fail would hold nothing true.
    @Test func theReadingFindsTwoFoldersThatDependOnEachOther() {
        let map = ServerMap(
            folders: ["Floor", "Left", "Right"],
            sources: [
                "Floor": ["struct Ground {}\nprivate struct Hidden {}\n"],
                "Left": ["import Foundation\n/// Not `Hidden`, nor \"Right\"'s `Beta` in a comment.\nstruct Alpha { let ground: Ground; let beta: Beta }\n"],
                "Right": ["struct Beta {\n    func alpha() -> Alpha? { nil }\n    let text = \"Hidden \\(1) Ground\"\n}\n"],
            ])
        #expect(map.dependencies == ["Floor": [], "Left": ["Floor", "Right"], "Right": ["Left"]])
        #expect(map.cycles == [["Left", "Right"]])
        #expect(map.uses["Left"]?["Right"] == ["Beta"])
    }

    @Test func theReadmeTableIsReadAsWritten() {
        let map = ReadmeMap(
            readme: """
                ## Before
                | `Ignored` | x | `Other` |
                ### The server's map (`Sources/ThreadDeskServer`)

                | folder | its job | depends on |
                |---|---|---|
                | `Top` | the root: `A` and `B` named in its job | everything below |
                | `A` | a feature | `B` (what for), `C` |
                | `C` | the floor | — |
                ## After
                | `Late` | x | `A` |
                """)
        #expect(
            map.rows == [
                .init(folder: "Top", dependsOn: [], everythingBelow: true), .init(folder: "A", dependsOn: ["B", "C"], everythingBelow: false),
                .init(folder: "C", dependsOn: [], everythingBelow: false),
            ])
    }

    @Test func theBoxNamesEveryTarget() throws {
        let readme = try Self.readme()
        guard let start = readme.range(of: "## What is in the box"), let end = readme.range(of: "### The server's map") else {
            Issue.record("the README has a box table before the server's map")
            return
        }
        let box = Set(readme[start.upperBound..<end.lowerBound].split(separator: "\n").filter { $0.hasPrefix("|") }.flatMap { ReadmeMap.quoted(in: String($0)) }
            .map { $0.split(separator: "/").last.map(String.init) ?? $0 })
        var targets: [String] = []
        for manifest in ["Package.swift", "Clients/ThreadDeskKit/Package.swift"] {
            let text = try String(contentsOf: Self.repository.appendingPathComponent(manifest), encoding: .utf8)
            for kind in [".target(", ".executableTarget(", ".systemLibrary("] {
                for part in text.components(separatedBy: kind).dropFirst() {
                    if let name = part.components(separatedBy: "name: \"").dropFirst().first?.components(separatedBy: "\"").first { targets.append(name) }
                }
            }
        }
        #expect(targets.count > 20, "the manifests are read: \(targets)")
        let missing = targets.filter { !box.contains($0) }
        #expect(missing.isEmpty, "targets the box table does not name: \(missing)")
    }
}

/// `swift test` typed as it is runs the tests eight at once (the `TestWidth` target sets it as the
/// test binary loads), unless the environment says otherwise.
@Suite struct TestWidthTests {
    @Test func theTestBinaryRunsEightTestsAtOnce() throws {
        let width = try #require(ProcessInfo.processInfo.environment["SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH"], "set before the tests started")
        #expect(Int(width).map { $0 > 0 } == true, "a width: \(width)")
    }
}
