import APNsEmulator
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
import ThreadDeskStore
@testable import ThreadDeskServer

/// Crash reports end to end against the emulators: a MetricKit payload into a note in the user's
/// thread, symbolicated with a dSYM built here (clang, Mach-O with DWARF), grouped across users,
/// answered by the rule `/crash fixed` sets, and read again when the dSYM comes later.
@Suite("Crash reports", .timeLimit(.minutes(4)))
struct CrashReportTests {
    static let secret = "test-dsyms-secret-0123456789"

    static func crashesOn(_ configuration: inout ServerConfiguration) {
        DeskTests.deskOn(&configuration)
        configuration.crashes.dsymsSecret = secret
        // Each server its own folder of dSYM files, as each machine has (tests run side by side).
        configuration.crashes.cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("dsyms-\(UUID().uuidString)").path
    }

    /// The sample app's dSYM, built once per test.
    static func fixture() throws -> (data: Data, functions: [String: UInt64]) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-fixture-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let built = try MachOFixture.build(in: directory)
        return (built.data, built.functions)
    }

    static func uploadDSYM(_ server: Harness, _ data: Data) async throws -> Harness.Reply {
        try await server.request(
            .post, "/internal/dsyms?app=default&name=MyShop", headers: [.authorization: "Bearer \(secret)"], raw: data)
    }

    /// A crash in `CheckoutView.submit()` called from `tapButton()`, from `version`.
    static func payload(_ functions: [String: UInt64], version: String = "4.2", build: String = "420") -> Data {
        MachOFixture.crashPayload(
            uuid: MachOFixture.defaultUUID, offsets: [functions["checkoutSubmit"]! + 16, functions["checkoutTap"]! + 12],
            mainOffset: functions["appMain"]! + 8, appVersion: version, build: build)
    }

    static func upload(_ server: Harness, _ payload: Data, token: String) async throws -> Harness.Reply {
        try await server.request(.post, "/v1/crashes", token: token, headers: [.contentType: "application/json"], raw: payload)
    }

    @Test func aReportIsANoteGroupedAcrossUsersAndAnsweredByTheRule() async throws {
        try await Self.groupedAndAnswered(store: nil)
    }

    /// The same on PostgreSQL: groups, counts and answers are the store's.
    @Test(.enabled(if: postgresIsAvailable)) func onPostgreSQLToo() async throws {
        try await withFreshPostgresSchema { url in try await Self.groupedAndAnswered(store: url) }
    }

    static func groupedAndAnswered(store: String?) async throws {
        guard MachOFixture.locateClang() != nil, Symbolizer.locate() != nil else {
            Issue.record("clang and llvm-symbolizer (the Swift toolchain's) are needed")
            return
        }
        let (dsym, functions) = try Self.fixture()
        try await withServer(gateway: true, store: store, Self.crashesOn) { server in
            let uploaded = try await Self.uploadDSYM(server, dsym)
            #expect(uploaded.status == .created)
            #expect(uploaded.json["binaries"]?[0]?["uuid"]?.stringValue == MachOFixture.defaultUUID)

            // The first user: a note with the symbolicated frames, the app's own first.
            let first = try await server.session()
            let report = try await Self.upload(server, Self.payload(functions), token: first.token)
            #expect(report.status == .created)
            let group = try #require(report.json["reports"]?[0]?["group"]?.stringValue)
            #expect(report.json["reports"]?[0]?["symbolicated"] == .bool(true))
            try await server.settled()
            let thread = try #require(try await server.thread(of: first.userId))
            try await server.emulator.waitUntil("the first report's note") { emulator in
                emulator.messages(inThread: thread).contains { $0.content.contains("Crash \(group)") }
            }
            let note = try #require(server.emulator.messages(inThread: thread).first { $0.content.contains("Crash \(group)") })
            #expect(note.content.hasPrefix(":ninja:"))
            for expected in ["EXC_BAD_ACCESS (SIGSEGV)", "CheckoutView.submit()", "CheckoutView.swift:4", "CheckoutView.tapButton()", "libswiftCore.dylib", "4.2 (420)", "iPhone15,2", "Seen by 1 user in 1 report"] {
                #expect(note.content.contains(expected), "the note lacks \(expected)")
            }
            #expect(note.content.range(of: "CheckoutView.submit()")!.lowerBound < note.content.range(of: "libswiftCore.dylib")!.lowerBound)
            #expect(note.content.utf16.count <= 2000)
            #expect(note.attachmentNames.count == 1 && note.attachmentNames[0].hasSuffix(".json"))
            // The user never sees it; the thread shows the crash tag.
            #expect(try await server.messages(token: first.token).isEmpty)
            #expect(Self.tagNames(server, thread).contains("crash"))
            // The same payload again: the same report, nothing new in Discord.
            let posts = server.emulator.messages(inThread: thread).count
            let again = try await Self.upload(server, Self.payload(functions), token: first.token)
            #expect(again.status == .ok && again.json["reports"]?[0]?["id"] == report.json["reports"]?[0]?["id"])
            try await server.settled()
            #expect(server.emulator.messages(inThread: thread).count == posts)

            // A second user's report of the same crash (another build) joins the group.
            let second = try await server.session()
            let joined = try await Self.upload(server, Self.payload(functions, build: "421"), token: second.token)
            #expect(joined.json["reports"]?[0]?["group"]?.stringValue == group)
            try await server.settled()
            let secondThread = try #require(try await server.thread(of: second.userId))
            #expect(server.emulator.messages(inThread: secondThread).contains { $0.content.contains("Seen by 2 users in 2 reports") })

            // The rule: fixed in 4.3.
            let ruled = try await DeskTests.run(server, "crash", in: thread, [.string("id", group), .string("fixed", "4.3")])
            #expect(ruled.ephemeral && ruled.content?.contains("Marked fixed in 4.3") == true)

            // A third user on 4.2: answered once, under the support voice, listed and pushed.
            let (third, thirdThread, device) = try await server.userWithThread()
            _ = try await Self.upload(server, Self.payload(functions, build: "422"), token: third.token)
            try await server.settled()
            let answer = try #require(try await server.messages(token: third.token).first { $0["author"]?.stringValue == "support" })
            #expect(answer["content"]?.stringValue == "This crash is fixed in 4.3; please update from the App Store.")
            try #require(server.apns.deliveries(to: device).count == 1, "the answer's push")
            #expect(server.emulator.messages(inThread: thirdThread).contains { $0.content.contains("the user was answered to update") })
            // Another crash of the same kind from the same user: no second answer.
            _ = try await Self.upload(server, Self.payload(functions, build: "423"), token: third.token)
            try await server.settled()
            #expect(try await server.messages(token: third.token).filter { $0["author"]?.stringValue == "support" }.count == 1)

            // A fourth user on 4.3: a regression, and the rule answers no more.
            let fourth = try await server.session()
            _ = try await Self.upload(server, Self.payload(functions, version: "4.3", build: "430"), token: fourth.token)
            try await server.settled()
            let fourthThread = try #require(try await server.thread(of: fourth.userId))
            #expect(server.emulator.messages(inThread: fourthThread).contains { $0.content.contains("Regression: marked fixed in 4.3, seen again in 4.3") })
            #expect(try await server.messages(token: fourth.token).isEmpty)
            let shown = try await DeskTests.run(server, "crash", in: thread, [.string("id", group)])
            #expect(shown.content?.contains("regression in 4.3") == true && shown.content?.contains("4 users, 5 reports") == true)
            #expect(shown.content?.contains("<#\(thread)>") == true && shown.content?.contains("<#\(fourthThread)>") == true)
            let listed = try await DeskTests.run(server, "crashes", in: thread)
            #expect(listed.content?.contains("**\(group)**") == true && listed.content?.contains("4 users, 5 reports") == true)
            // The export holds what the app sent, never the developer's symbols.
            let export = try await server.request(.get, "/v1/me/export", token: first.token)
            let frames = try #require(export.json["crashReports"]?[0]?["frames"]?.arrayValue).compactMap(\.stringValue)
            #expect(!frames.isEmpty && frames.allSatisfy { $0.contains("+0x") } && !frames.contains { $0.contains("CheckoutView") })
            #expect(export.json["crashReports"]?[0]?["group"]?.stringValue == group)
            let metrics = try await server.metricsText()
            #expect(metrics.contains("threaddesk_crash_reports_total 5") && metrics.contains("threaddesk_crash_answers_total 1"))
        }
    }

    @Test func aReportWhoseDSYMComesLaterIsSymbolicatedThenAndItsNoteEdited() async throws {
        guard MachOFixture.locateClang() != nil, Symbolizer.locate() != nil else {
            Issue.record("clang and llvm-symbolizer (the Swift toolchain's) are needed")
            return
        }
        let (dsym, functions) = try Self.fixture()
        try await withServer(Self.crashesOn) { server in
            let user = try await server.session()
            let report = try await Self.upload(server, Self.payload(functions), token: user.token)
            #expect(report.status == .created && report.json["reports"]?[0]?["symbolicated"] == .bool(false))
            try await server.settled()
            let thread = try #require(try await server.thread(of: user.userId))
            let before = try #require(server.emulator.messages(inThread: thread).first { $0.content.contains("💥") })
            #expect(before.content.contains("Not symbolicated") && before.content.contains("MyShop") && !before.content.contains("CheckoutView"))

            let uploaded = try await Self.uploadDSYM(server, dsym)
            #expect(uploaded.status == .created && uploaded.json["reports"]?.intValue == 1)
            let after = try #require(server.emulator.messages(inThread: thread).first { $0.id == before.id })
            #expect(after.content.contains("CheckoutView.submit()") && !after.content.contains("Not symbolicated"))
            // A second upload of the same dSYM reads nothing again.
            #expect(try await Self.uploadDSYM(server, dsym).json["reports"]?.intValue == 0)
        }
    }

    @Test func aHangIsANoteMarkedAsAHang() async throws {
        try await withServer(Self.crashesOn) { server in
            let user = try await server.session()
            let payload = MachOFixture.hangPayload(uuid: MachOFixture.defaultUUID, offsets: [0x30, 0x60], mainOffset: 0xB0, duration: "7 sec")
            let reply = try await Self.upload(server, payload, token: user.token)
            #expect(reply.status == .created && reply.json["reports"]?[0]?["kind"]?.stringValue == "hang")
            try await server.settled()
            let thread = try #require(try await server.thread(of: user.userId))
            let note = try #require(server.emulator.messages(inThread: thread).first { $0.content.contains("🐢") })
            #expect(note.content.contains("**Hang C") && note.content.contains("Hang (7 sec)") && note.content.contains("MyShop"))
            #expect(!note.content.contains("EXC_"))
        }
    }

    @Test func theDesksAnswersFitInAPostHoweverLongTheTitles() async throws {
        try await withServer(gateway: true, Self.crashesOn) { server in
            let (user, thread, _) = try await server.userWithThread()
            let owner = try #require(UserID(user.userId))
            let now = Date()
            for index in 0..<15 {
                let group = try await server.store.recordCrashGroup(
                    app: .default, signatureHash: "long-\(index)", signature: String(repeating: "s", count: 500), kind: "crash",
                    title: String(repeating: "@here <#1> ", count: 40), version: String(repeating: "9", count: 40), at: now)
                try await server.store.saveCrashReport(
                    CrashReport(
                        id: Snowflake(UInt64(1_600_000_000_000_000_000 + index)), owner: owner, group: group.number, kind: "crash", appVersion: "1",
                        appBuild: "1", payloadKey: "long-\(index)", detail: "{}", createdAt: now))
            }
            let listed = try await DeskTests.run(server, "crashes", in: thread)
            let content = try #require(listed.content)
            #expect(content.utf16.count <= 2000 && content.contains("more"))
            // Every mention the titles hold is escaped.
            #expect(content.contains("\\@here") && !content.replacingOccurrences(of: "\\@", with: "").contains("@"))
            let one = try await DeskTests.run(server, "crash", in: thread, [.string("id", "C1")])
            #expect((one.content?.utf16.count ?? 0) <= 2000 && one.content?.contains("C1") == true)
        }
    }

    /// A crash whose attributed stack is `frames` deep, written as text (no recursion to build it).
    static func deepStack(frames: Int) -> Data {
        let frame = #"{"binaryName":"MyShop","binaryUUID":"11111111-2222-3333-4444-555555555555","offsetIntoBinaryTextSegment":16,"sampleCount":1"#
        let chain = Array(repeating: frame + #","subFrames":["#, count: frames - 1).joined() + frame + "}" + String(repeating: "]}", count: frames - 1)
        let text = #"{"crashDiagnostics":[{"diagnosticMetaData":{"appVersion":"1","exceptionType":1,"signal":11},"callStackTree":{"callStackPerThread":true,"callStacks":[{"threadAttributed":true,"callStackRootFrames":["#
            + chain + "]}]}}]}"
        return Data(text.utf8)
    }

    static func tagNames(_ server: Harness, _ thread: String) -> [String] {
        let names = server.emulator.tagNames
        return (DeskTests.thread(server, thread)?.appliedTags ?? []).compactMap { names[$0] }
    }

    @Test func anIgnoredCrashPutsNoTagOnTheThread() async throws {
        try await withServer(gateway: true, Self.crashesOn) { server in
            let payload = MachOFixture.crashPayload(uuid: MachOFixture.defaultUUID, offsets: [0x20], mainOffset: 0xB0)
            let (first, firstThread, _) = try await server.userWithThread()
            let report = try await Self.upload(server, payload, token: first.token)
            let group = try #require(report.json["reports"]?[0]?["group"]?.stringValue)
            try await server.settled()
            #expect(Self.tagNames(server, firstThread).sorted() == ["crash", "needs reply"])
            let ignored = try await DeskTests.run(server, "crash", in: firstThread, [.string("id", group), .init(name: "ignore", type: 5, value: "true")])
            #expect(ignored.content?.contains("Ignored") == true)
            let (second, secondThread, _) = try await server.userWithThread()
            #expect(try await Self.upload(server, payload, token: second.token).json["reports"]?[0]?["group"]?.stringValue == group)
            try await server.settled()
            #expect(server.emulator.messages(inThread: secondThread).contains { $0.content.contains("Ignored (`/crash ignore`)") })
            #expect(Self.tagNames(server, secondThread) == ["needs reply"])
            // An unknown group, and a version that is none: told, nothing changed.
            let unknown = try await DeskTests.run(server, "crash", in: firstThread, [.string("id", "C999")])
            #expect(unknown.content?.contains("No crash group") == true)
            let odd = try await DeskTests.run(server, "crash", in: firstThread, [.string("id", group), .string("fixed", "<@everyone>")])
            #expect(odd.content?.contains("is no version") == true)
            #expect(try await server.store.crashGroup(app: .default, number: 1)?.fixedIn == nil)
        }
    }

    @Test func hostileInputIsRefusedClearlyAndNothingReachesDiscord() async throws {
        try await withServer(Self.crashesOn) { server in
            let user = try await server.session()
            let valid = String(decoding: MachOFixture.crashPayload(uuid: "11111111-2222-3333-4444-555555555555", offsets: [0x10]), as: UTF8.self)
            let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
            let bodies: [String] = [
                String(valid.prefix(valid.count / 2)),  // truncated
                "[]", "42", #"{"crashDiagnostics": "no"}"#, #"{"crashDiagnostics": [{"callStackTree": 7}]}"#,
                #"{"cpuExceptionDiagnostics": [{}]}"#, #"{"crashDiagnostics": []}"#,
                #"{"crashDiagnostics": [{"diagnosticMetaData": {}, "callStackTree": {"callStacks": [{"callStackRootFrames": [{"offsetIntoBinaryTextSegment": "x"}]}]}}]}"#,
                deep, "{\"crashDiagnostics\":" + deep + "}",
            ]
            for body in bodies {
                let reply = try await Self.upload(server, Data(body.utf8), token: user.token)
                #expect(reply.status.code >= 400 && reply.status.code < 500, "\(body.prefix(60)): \(reply.status)")
                #expect(reply.errorCode != nil)
            }
            // Over 2 MiB: refused before it is read.
            let huge = try await Self.upload(server, Data(repeating: 0x20, count: 2 * 1024 * 1024 + 1), token: user.token)
            #expect(huge.status == .contentTooLarge)
            try await server.settled()
            #expect(try await server.thread(of: user.userId) == nil)

            // Frames of unknown binaries and UUIDs: a note without symbols.
            let unknown = try await Self.upload(server, Data(valid.utf8), token: user.token)
            #expect(unknown.status == .created && unknown.json["reports"]?[0]?["symbolicated"] == .bool(false))
            // Nearly 2 MiB of frames: taken, bounded.
            let frame = #"{"binaryName":"MyShop","binaryUUID":"11111111-2222-3333-4444-555555555555","offsetIntoBinaryTextSegment":16,"address":4294967312,"sampleCount":1}"#
            let many = Array(repeating: frame, count: 2 * 1024 * 1024 / (frame.utf8.count + 1) - 100).joined(separator: ",")
            let wide = #"{"crashDiagnostics":[{"diagnosticMetaData":{"appVersion":"1"},"callStackTree":{"callStackPerThread":true,"callStacks":[{"threadAttributed":true,"callStackRootFrames":[\#(many)]}]}}]}"#
            let taken = try await Self.upload(server, Data(wide.utf8), token: user.token)
            #expect(taken.status == .created, "\(taken.status) \(taken.errorCode ?? "")")
            // Real stacks nest two levels a frame: 60 frames, and a stack overflow's 3,000 (cut
            // below its top frames), are taken.
            for depth in [60, 3000] {
                let deepStack = Self.deepStack(frames: depth)
                let reply = try await Self.upload(server, deepStack, token: user.token)
                #expect(reply.status == .created, "\(depth) frames: \(reply.status) \(reply.errorCode ?? "")")
            }
            // A binary name of one character made of 20,000 scalars: a note within Discord's limit.
            let heavy = "e" + String(repeating: "\u{301}", count: 20_000)
            let marks = #"{"crashDiagnostics":[{"diagnosticMetaData":{"appVersion":"1","terminationReason":"\#(heavy)"},"callStackTree":{"callStackPerThread":true,"callStacks":[{"threadAttributed":true,"callStackRootFrames":[{"binaryName":"\#(heavy)","offsetIntoBinaryTextSegment":1}]}]}}]}"#
            #expect(try await Self.upload(server, Data(marks.utf8), token: user.token).status == .created)
            try await server.settled()
            let thread = try #require(try await server.thread(of: user.userId))
            for note in server.emulator.messages(inThread: thread) { #expect(note.content.utf16.count <= 2000) }

            // dSYM uploads: the secret, and something that is a dSYM.
            #expect(try await server.request(.post, "/internal/dsyms", raw: Data([1, 2, 3])).status == .unauthorized)
            let junk = try await server.request(.post, "/internal/dsyms", headers: [.authorization: "Bearer \(Self.secret)"], raw: Data("not a dSYM".utf8))
            #expect(junk.status == .badRequest && junk.errorCode == "invalid_dsym")
            let otherApp = try await server.request(.post, "/internal/dsyms?app=nope", headers: [.authorization: "Bearer \(Self.secret)"], raw: Data([1]))
            #expect(otherApp.status == .badRequest)
        }
    }
}
