import DiscordEmulator
import Foundation
import Testing
import TestSupport
import ThreadDeskKit
import ThreadDeskServer

/// The SDK's crash reporter against the server: a MetricKit payload kept on the device (a launch
/// with no session), sent once with the next session, in the user's thread as a note.
@Suite("SDK: crash reports")
struct SDKCrashReportTests {
    @Test func aKeptPayloadIsSentOnceWithTheNextSessionAndBecomesANote() async throws {
        try await withSDKServer { server in
            let payload = MachOFixture.crashPayload(uuid: MachOFixture.defaultUUID, offsets: [0x40, 0x80], mainOffset: 0x100)
            let folder = server.folder.appendingPathComponent("crash-reports")
            // The app was killed after MetricKit handed it the payload: kept, nothing sent.
            do {
                let client = server.client()
                let reports = SupportCrashReports(client: client, directory: folder)
                #expect(reports.keep(payload))
                #expect(reports.pendingPayloads() == [payload])
            }
            // The next launch: a session, then the kept payload goes, once.
            let client = server.client()
            try await client.open()
            let reports = SupportCrashReports(client: client, directory: folder)
            let sent = await reports.send()
            let receipt = try requireValue(sent.first?.reports.first, "no receipt")
            #expect(receipt.kind == "crash" && receipt.group.hasPrefix("C") && !receipt.symbolicated)
            #expect(reports.pendingPayloads().isEmpty)
            #expect(await reports.send().isEmpty)
            let thread = try await server.thread(of: client)
            let notes = server.emulator.messages(inThread: thread).filter { $0.content.contains("Crash \(receipt.group)") }
            #expect(notes.count == 1)
            #expect(notes.first?.content.hasPrefix(":ninja:") == true && notes.first?.content.contains("EXC_BAD_ACCESS") == true)
            // The user never sees it.
            #expect(try await client.messages().messages.isEmpty)
        }
    }
}
