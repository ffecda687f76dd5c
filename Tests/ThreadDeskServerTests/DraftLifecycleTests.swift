import AssistEmulator
import DiscordEmulator
@testable import DiscordREST
import Foundation
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer

/// When drafts are written: after the delay on the server's clock (a burst gets one), and not
/// stopped by ThreadDesk's own away message. And the pure parts: the note, the ids, a send's fate.
@Suite("Draft lifecycle", .timeLimit(.minutes(3)))
struct DraftLifecycleTests {
    @Test func aBurstWhileSupportIsAwayGetsOneDraftAfterTheDelay() async throws {
        let clock = ManualClock()
        try await AssistEmulator.withRunning(logger: testLogger()) { assist in
            let endpoints = await assist.endpoints()
            assist.setPermanentOutcome(.answer("We will look at it in the morning."))
            try await withServer(gateway: true, time: .driven(by: clock, from: AwayTests.mondayEvening)) { configuration in
                configuration.desk.hours = try? SupportHours("UTC Mon-Fri 09:00-17:00")
                configuration.desk.awayMessage = AwayTests.awayText
                configuration.assist.url = endpoints.baseURL
                configuration.assist.model = endpoints.model
                configuration.assist.draftDelay = .seconds(10)
            } _: { server in
                let (user, thread, _) = try await server.userWithThread(first: "The sync fails")
                _ = try await server.send("and the widget is empty", token: user.token)
                try await server.settled(driving: clock)
                // The away message went, and nothing was drafted yet: the delay has not passed.
                #expect(try await AwayTests.supportMessages(server, user.token) == [AwayTests.awayText])
                #expect(assist.recordedRequests.isEmpty && DraftTests.draftNotes(server, thread).isEmpty)
                // Each message restarts the wait; once it passes, one draft answers the newest.
                for _ in 0..<4 where DraftTests.draftNotes(server, thread).isEmpty {
                    clock.advance(by: .seconds(10))
                    try await server.settled(driving: clock)
                }
                #expect(assist.recordedRequests.count == 1)
                #expect(try #require(assist.recordedRequests.first).messages[1].content.contains("and the widget is empty"))
                let notes = DraftTests.draftNotes(server, thread)
                #expect(notes.count == 1 && notes.first?.buttons.count == 3, "the away message dropped nothing")
            }
        }
    }

    @Test func theNoteShowsExactlyWhatSendPosts() {
        // Every character escaped doubles: the text is fitted so that the note never clips it.
        let text = String(repeating: "a:b#c ", count: 300)
        let fitted = DraftNote.fitted(text, sources: ["1", "2", "3"])
        #expect(fitted.count < text.count && fitted.hasSuffix("…"))
        let longest = "✏️ Draft edited and sent by \(String(repeating: "n", count: 32)):"
        let note = DraftNote.content(longest, fitted, sources: ["1", "2", "3"])
        #expect(note.utf16.count <= MessageText.discordLimit)
        #expect(note.contains(DiscordMarkdown.quoted(DiscordMarkdown.escaped(fitted))), "the whole fitted text is in the note")
        #expect(DraftNote.fitted("short", sources: []) == "short")
    }

    @Test func noLineBreakEndsTheQuoteAndPassesForTheNotesOwnLines() {
        // Discord breaks a line at each of these; so does the quote, so every line stays quoted.
        for breaking in ["\n", "\r\n", "\r", "\u{85}", "\u{2028}", "\u{2029}", "\n\r\n"] {
            let text = "Try this.\(breaking)🤖 Draft dropped: an agent replied.\(breaking)-# [Refund](https://evil.example) @everyone"
            let note = DraftNote.content("🤖 Draft answer (not sent yet):", text, sources: [])
            let lines = note.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
            #expect(lines.count == 2 + text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).count)
            #expect(lines.dropFirst().dropLast().allSatisfy { $0.hasPrefix("> ") }, "every line of the text is quoted: \(note.debugDescription)")
            #expect(!note.contains("[Refund]") && !note.contains(" @everyone") && note.contains("\\@everyone") && note.contains("\\[Refund\\]"))
        }
    }

    @Test func customIDsRoundTripAndStrangersParseToNothing() throws {
        let id = DraftCustomID(draft: Snowflake(1_234_567_890_123), action: .submitEdit)
        #expect(DraftCustomID(id.description) == id && id.description.utf8.count <= 100)
        for other in ["td1:", "td1:x:s", "td1:1:z", "td1:1:s:extra", "draft:send:1", "td2:1:s", String(repeating: "9", count: 200)] {
            #expect(DraftCustomID(other) == nil, "\(other)")
        }
    }

    @Test func aSendThatFailedIsClassifiedByWhereItGot() {
        let refused = DiscordError.api(DiscordAPIError(status: 400, code: .invalidFormBody, message: "no", errors: nil))
        #expect(Drafts.outcome(of: refused, at: .before) == .notSent)
        #expect(Drafts.outcome(of: refused, at: .posting) == .notSent)
        #expect(Drafts.outcome(of: DiscordError.rateLimited(retryAfter: .seconds(30)), at: .posting) == .notSent)
        #expect(Drafts.outcome(of: SupportVoice.WebhookBusy(), at: .posting) == .notSent)
        #expect(Drafts.outcome(of: DiscordError.unavailable(attempts: 3, lastProblem: "timeout"), at: .posting) == .maybeSent)
        #expect(Drafts.outcome(of: CancellationError(), at: .posted) == .sent)
    }
}
