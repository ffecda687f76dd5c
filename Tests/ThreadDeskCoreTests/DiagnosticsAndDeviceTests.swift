import DiscordREST
import Foundation
import Testing
import ThreadDeskCore

@Suite("Diagnostics summary and device info")
struct DiagnosticsAndDeviceTests {
    @Test func filenamesCarryTheUTCTime() {
        #expect(DiagnosticsSummary.filename(at: Date(timeIntervalSince1970: 1_795_375_905)) == "diagnostics-20261122T193145Z.json")
    }

    @Test func highlightsWhatSupportReadsFirstWhereverItIs() throws {
        let document = try JSON.parse(Data(#"""
            {"meta":{"app":{"appVersion":"2.3.1","buildNumber":"231"}},"system":{"platform":"iOS","systemVersion":"18.1",
             "model":"iPad13,4","locale":"fr_FR"},"crashes":[{"id":1},{"id":2},{"id":3},{"id":4},{"id":5},{"id":6}],
             "note":"line one\nline two @everyone `code`"}
            """#.utf8))
        let note = DiagnosticsSummary(filename: "d.json", byteCount: 2048, document: document).note
        #expect(note.hasPrefix(":ninja: **Diagnostics** `d.json` (2.0 KiB)"))
        for line in ["- **App version**: 2.3.1", "- **Build**: 231", "- **Platform**: iOS", "- **OS version**: 18.1", "- **Device**: iPad13,4", "- **Locale**: fr_FR"] {
            #expect(note.contains(line), "\(line)")
        }
        #expect(note.contains("- crashes: 6 items"))
        #expect(note.contains("line one line two"))
        #expect(note.contains("\\@everyone") && !note.contains(" @everyone"))
        #expect(note.contains("\\`code\\`"))
    }

    /// A document's keys and values are the client's: shown as text, never made into a link, a
    /// mention or a heading in a note an agent trusts.
    @Test func clientMarkdownInTheSummaryIsShownAsText() throws {
        let document = try JSON.parse(Data(#"""
            {"appVersion":"[Update](https://evil.example)","# Heading":"<@123456789012345678>","> quote":"@here","-# small":"<#1>"}
            """#.utf8))
        let note = DiagnosticsSummary(filename: "d.json", byteCount: 10, document: document).note
        #expect(note.contains("- **App version**: \\[Update\\](https\\://evil.example)"))
        #expect(note.contains("- \\# Heading: \\<\\@123456789012345678\\>"))
        #expect(note.contains("- \\> quote: \\@here"))
        #expect(note.contains("- -\\# small: \\<\\#1\\>"))
    }

    @Test func neverLongerThanOneDiscordMessage() throws {
        var object: [String: JSON] = [:]
        for index in 0..<2000 { object["key-\(index)-😀"] = .string(String(repeating: "🇫🇷", count: 60)) }
        let note = DiagnosticsSummary(filename: "d.json", byteCount: 9_000_000, document: .object(object)).note
        #expect(note.utf16.count <= 2000)
        #expect(note.contains("more lines in the file"))
        #expect(note.contains("8.6 MiB"))
    }

    @Test func deviceInfoReadsKnownAndExtraFields() throws {
        let info = try InstallationInfo(json: try JSON.parse(Data(#"{"appVersion":"1.4.0","buildVersion":142,"osPlatform":"iOS","osVersion":"17.2","locale":"en_GB","deviceModel":"iPhone15,2","beta":true,"userId":"ignored","note":null}"#.utf8)))
        #expect(info.appLabel == "1.4.0 (142)")
        #expect(info.other == ["beta": "true"])
        #expect(info.note == ":ninja: **Device info**\n- App: 1.4.0 (142)\n- OS: iOS 17.2\n- Device: iPhone15,2\n- Locale: en_GB\n- beta: true")
    }

    @Test func markdownIsEscapedCharacterByCharacter() {
        #expect(DiscordMarkdown.escaped("plain 1.4.0 (142) de_DE") == "plain 1.4.0 (142) de_DE")
        #expect(
            DiscordMarkdown.escaped(#"@everyone <@1> [a](https://b) # h > q **b** `c` ||s|| ~~x~~ \"#)
                == ##"\@everyone \<\@1\> \[a\](https\://b) \# h \> q \*\*b\*\* \`c\` \|\|s\|\| \~\~x\~\~ \\"##)
    }

    @Test func deviceInfoShowsTheClientsMarkdownAsText() throws {
        let info = try InstallationInfo(json: ["appVersion": "[2.0](https://evil.example)", "deviceModel": "@everyone <@1>", "channel": "# news"])
        #expect(info.note == ":ninja: **Device info**\n- App: \\[2.0\\](https\\://evil.example)\n- Device: \\@everyone \\<\\@1\\>\n- channel: \\# news")
        // The thread's name is not markdown: it keeps the text as it came.
        #expect(info.appLabel == "[2.0](https://evil.example)")
    }

    @Test(arguments: ["line\nbreak", "**bold**", "[x](https://e)", "@everyone", "<@1>", "# h", "> q", "a:b", "", String(repeating: "k", count: 65), "zero\u{200B}width"])
    func deviceInfoKeysMustBePlainNames(key: String) {
        #expect(throws: InstallationInfo.Problem.invalidKey) { try InstallationInfo(json: .object([key: .string("x")])) }
    }

    @Test func plainKeysAreAccepted() throws {
        let info = try InstallationInfo(json: ["sdk_version": "1", "app.build-flavor": "beta", "Gerät Name": "x", "a/b": "y"])
        #expect(info.other.count == 4)
    }

    @Test func deviceInfoRejectsWhatCannotBeShownOnOneLine() {
        #expect(throws: InstallationInfo.Problem.notAnObject) { try InstallationInfo(json: .array([])) }
        #expect(throws: InstallationInfo.Problem.invalidValue(field: "osVersion")) {
            try InstallationInfo(json: ["osVersion": "17\n2"])
        }
        #expect(throws: InstallationInfo.Problem.invalidValue(field: "nested")) { try InstallationInfo(json: ["nested": ["a": 1]]) }
    }
}
