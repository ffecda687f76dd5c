import APNsEmulator
import DiscordEmulator
import DiscordREST
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer
import ThreadDeskStore
import ThreadDeskWire

/// The conversations' timers on a clock the test drives: a scheduled close when due (and
/// cancelled by the user), auto-close, and one reminder per wait counted in support hours.
@Suite("Conversation timers", .timeLimit(.minutes(4)))
struct ConversationTimerTests {
    /// Friday 2026-12-04 16:50 UTC.
    static let friday = try! Date("2026-12-04T16:50:00Z", strategy: .iso8601)
    static let role = "777000000000000001"

    /// Runs a command on a server whose clock the test drives, and waits for its answer.
    static func run(
        _ server: Harness, _ clock: ManualClock, _ name: String, in thread: String, _ options: [DiscordEmulator.CommandOption] = []
    ) async throws -> DiscordEmulator.InteractionSnapshot {
        try await server.settled(driving: clock)
        try #require(server.emulator.commands.contains { $0.name == name }, "/\(name) registered")
        let started = try server.emulator.runCommand(name, inChannel: thread, options: options)
        try await server.settled(driving: clock)
        let answered = try #require(server.emulator.interaction(started.id))
        try #require(answered.content?.isEmpty == false, "/\(name) answered")
        return answered
    }

    /// The server's date now: the test's start plus what the clock has run.
    static func now(_ clock: ManualClock) -> Date { friday.addingTimeInterval(clock.now.offset / .seconds(1)) }

    static func conversation(_ server: Harness, _ user: Harness.Session) async throws -> ConversationRecord? {
        try await server.store.latestConversation(of: try #require(UserID(user.userId)))
    }

    static func notes(_ server: Harness, _ thread: String, containing text: String) -> [DiscordEmulator.MessageSnapshot] {
        server.emulator.messages(inThread: thread).filter { $0.content.hasPrefix(":ninja:") && $0.content.contains(text) }
    }

    @Test func aScheduledCloseClosesWhenDueAndTheUsersNextMessageCancelsIt() async throws {
        let clock = ManualClock()
        try await withServer(gateway: true, time: .driven(by: clock, from: Self.friday), DeskTests.deskOn) { server in
            try await server.settled(driving: clock)
            let (user, thread, _) = try await server.userWithThread()
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "That should do it")
            try await server.settled(driving: clock)

            let refused = try await Self.run(server, clock, "close", in: thread, [.string("in", "soon")])
            #expect(refused.content?.contains("Nothing was scheduled") == true)
            let asked = Self.now(clock)
            let answer = try await Self.run(server, clock, "close", in: thread, [.string("in", "2h")])
            #expect(answer.content?.contains("closes <t:") == true)
            let due = try #require(try await Self.conversation(server, user)?.closeDueAt)
            #expect((7200...7260).contains(due.timeIntervalSince(asked)), "two hours from the command")
            #expect(Self.notes(server, thread, containing: "scheduled a close <t:\(Int(due.timeIntervalSince1970)):R>").count == 1)
            // A minute early: still open.
            clock.advance(by: .seconds(due.timeIntervalSince(Self.now(clock)) - 60))
            try await server.settled(driving: clock)
            #expect(try await Self.conversation(server, user)?.isOpen == true)
            clock.advance(by: .seconds(60))
            try await server.settled(driving: clock)
            let closed = try #require(try await Self.conversation(server, user))
            #expect(closed.closedBy == .scheduled && closed.closedAt.map { $0 >= due } == true && closed.ratingRequestedAt == closed.closedAt)
            #expect(DeskTests.thread(server, thread)?.archived == true)
            #expect(Self.notes(server, thread, containing: "Closed as scheduled").count == 1)
            #expect(try await server.request(.get, "/v1/messages", token: user.token).decode(MessagePage.self).ratingRequest != nil)

            // Again, and this time the user writes before it is due: cancelled, and said.
            #expect(try await server.send("one more question", token: user.token).status == .created)
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Sure")
            try await server.settled(driving: clock)
            let reopened = try #require(try await Self.conversation(server, user))
            #expect(reopened.id != closed.id && reopened.isOpen)
            _ = try await Self.run(server, clock, "close", in: thread, [.string("in", "1h")])
            clock.advance(by: .seconds(600))
            #expect(try await server.send("wait, not yet", token: user.token).status == .created)
            try await server.settled(driving: clock)
            #expect(Self.notes(server, thread, containing: "is cancelled").count == 1)
            #expect(try await Self.conversation(server, user)?.closeDueAt == nil)
            clock.advance(by: .seconds(7200))
            try await server.settled(driving: clock)
            let stillOpen = try #require(try await Self.conversation(server, user))
            #expect(stillOpen.id == reopened.id && stillOpen.isOpen)
            #expect(Self.notes(server, thread, containing: "Closed as scheduled").count == 1)
        }
    }

    @Test func aScheduledCloseSurvivesARestart() async throws {
        let storeURL = "sqlite://\(temporaryStorePath())"
        let first = ManualClock()
        let owner = Watched<(String, String)?>(nil)
        try await withServer(gateway: true, store: storeURL, time: .driven(by: first, from: Self.friday), DeskTests.deskOn) { server in
            try await server.settled(driving: first)
            let (user, thread, _) = try await server.userWithThread()
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "Done")
            try await server.settled(driving: first)
            _ = try await Self.run(server, first, "close", in: thread, [.string("in", "3h")])
            #expect(try await Self.conversation(server, user)?.closeDueAt != nil)
            owner.update { $0 = (user.userId, thread) }
        }
        let (userID, _) = try #require(owner.value)
        // The deployment again, four hours later: the close that came due while it was down is made.
        let second = ManualClock()
        try await withServer(gateway: true, store: storeURL, time: .driven(by: second, from: Self.friday.addingTimeInterval(4 * 3600)), DeskTests.deskOn) { server in
            try await server.settled(driving: second)
            let id = try #require(UserID(userID))
            let closed = try #require(try await server.store.latestConversation(of: id))
            #expect(closed.closedBy == .scheduled && closed.closedAt.map { $0 >= Self.friday.addingTimeInterval(4 * 3600) } == true)
        }
    }

    @Test func aConversationSupportAnsweredLastClosesItselfAfterAutoCloseDays() async throws {
        let clock = ManualClock()
        let message = "Closing this for now — write again anytime."
        try await withServer(gateway: true, time: .driven(by: clock, from: Self.friday)) { configuration in
            DeskTests.deskOn(&configuration)
            configuration.lifecycle.autoCloseAfter = .seconds(3 * 86_400)
            configuration.lifecycle.autoCloseMessage = message
        } _: { server in
            try await server.settled(driving: clock)
            let (answered, answeredThread, device) = try await server.userWithThread()
            let (waiting, waitingThread, _) = try await server.userWithThread(device: String(repeating: "cd", count: 32))
            _ = try server.emulator.replyAsAgent(inThread: answeredThread, content: "Here is how")
            _ = try server.emulator.replyAsAgent(inThread: waitingThread, content: "Which version?")
            try await server.settled(driving: clock)
            // The second user answers: support owes the next word there.
            #expect(try await server.send("4.2", token: waiting.token).status == .created)
            try await server.settled(driving: clock)

            clock.advance(by: .seconds(2 * 86_400))
            try await server.settled(driving: clock)
            #expect(try await Self.conversation(server, answered)?.isOpen == true)
            clock.advance(by: .seconds(86_400 + 60))
            try await server.settled(driving: clock)
            let closed = try #require(try await Self.conversation(server, answered))
            #expect(closed.closedBy == .auto && closed.ratingRequestedAt != nil)
            let last = try #require(try await server.messages(token: answered.token).last)
            #expect(last["content"]?.stringValue == message && last["author"]?.stringValue == "support")
            #expect(DeskTests.thread(server, answeredThread)?.archived == true)
            #expect(RatingTests.ratingPushes(server, device).count == 1)
            // Nobody closes a conversation that waits for support.
            #expect(try await Self.conversation(server, waiting)?.isOpen == true)
            clock.advance(by: .seconds(30 * 86_400))
            try await server.settled(driving: clock)
            #expect(try await Self.conversation(server, waiting)?.isOpen == true)
            #expect(server.emulator.messages(inThread: answeredThread).filter { $0.content.contains(message) }.count == 1, "said once")
        }
    }

    @Test func aWaitIsRemindedOnceAfterItsSupportHours() async throws {
        let clock = ManualClock()
        try await withServer(gateway: true, time: .driven(by: clock, from: Self.friday)) { configuration in
            configuration.desk.hours = try! SupportHours("UTC Mon-Fri 09:00-17:00")
            configuration.desk.roleID = Self.role
            configuration.lifecycle.remindAfter = .seconds(30 * 60)
        } _: { server in
            try await server.settled(driving: clock)
            // Friday 16:50: ten minutes of support hours left this week.
            let (user, thread, _) = try await server.userWithThread()
            try await server.settled(driving: clock)
            let reminders = { Self.notes(server, thread, containing: "waiting for a reply") }
            clock.advance(by: .seconds(20 * 60))
            try await server.settled(driving: clock)
            #expect(reminders().isEmpty, "10 minutes of support hours")
            // Monday 09:19: 29 minutes.
            clock.advance(by: .seconds(try Date("2026-12-07T09:19:00Z", strategy: .iso8601).timeIntervalSince(Self.now(clock))))
            try await server.settled(driving: clock)
            #expect(reminders().isEmpty, "29 minutes of support hours")
            clock.advance(by: .seconds(60))
            try await server.settled(driving: clock)
            let reminder = try #require(reminders().first, "reminded at 30 minutes")
            #expect(reminder.content.contains("<@&\(Self.role)>") && reminder.mentionRoles == [Self.role] && !reminder.mentionEveryone)
            clock.advance(by: .seconds(3600))
            try await server.settled(driving: clock)
            #expect(reminders().count == 1, "once per wait")
            // Answered, then a new wait: reminded again, once.
            _ = try server.emulator.replyAsAgent(inThread: thread, content: "On it")
            try await server.settled(driving: clock)
            #expect(try await server.send("any news?", token: user.token).status == .created)
            try await server.settled(driving: clock)
            clock.advance(by: .seconds(29 * 60))
            try await server.settled(driving: clock)
            #expect(reminders().count == 1)
            clock.advance(by: .seconds(60))
            try await server.settled(driving: clock)
            let seen = try await Self.conversation(server, user)
            #expect(reminders().count == 2, "\(String(describing: seen)) at \(Self.now(clock))")
            #expect(seen?.reminders == 2)
            let metrics = try await server.metricsText()
            #expect(metrics.contains(#"threaddesk_reminders_total{app="default"} 2"#))
        }
    }
}
