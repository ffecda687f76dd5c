import Foundation
import Testing
import TestSupport
@testable import ThreadDeskServer

/// The doctor on crash reports: a symbolizer is needed once dSYMs are configured.
@Suite("Doctor: crash reports")
struct DoctorCrashTests {
    static func doctor(_ change: (inout CrashSettings) -> Void) -> Doctor {
        var configuration = ServerConfiguration(discordToken: "t", discordAPIURL: "http://127.0.0.1:1", guildID: "1", forumChannelID: "2", appKey: "k")
        change(&configuration.crashes)
        return Doctor(configuration: configuration, logger: testLogger())
    }

    @Test func withoutDSYMsNothingIsNeeded() {
        let checks = Self.doctor { $0.symbolizerPath = nil }.crashChecks()
        #expect(checks.map(\.name) == ["crashes"] && checks.allSatisfy(\.passed))
    }

    @Test func dSYMsWithoutASymbolizerFail() {
        let missing = Self.doctor { ($0.dsymsSecret, $0.symbolizerPath) = ("a-secret-of-16-chars", nil) }.crashChecks()
        #expect(missing.map(\.name) == ["crashes.symbolizer"] && missing.first?.passed == false)
        #expect(missing.first?.fix?.contains("SYMBOLIZER_PATH") == true)
        let wrong = Self.doctor { ($0.dsymsSecret, $0.symbolizerPath) = ("a-secret-of-16-chars", "/nonexistent/llvm-symbolizer") }.crashChecks()
        #expect(wrong.first?.passed == false && wrong.first?.detail.contains("/nonexistent/llvm-symbolizer") == true)
    }

    @Test func dSYMsWithTheToolchainsSymbolizerPass() throws {
        let path = try #require(Symbolizer.locate(), "the Swift toolchain's llvm-symbolizer")
        let found = Self.doctor { ($0.dsymsSecret, $0.symbolizerPath) = ("a-secret-of-16-chars", path) }.crashChecks()
        #expect(found.first?.passed == true && found.first?.detail.contains(path) == true)
    }
}
