import APNsEmulator
import DiscordEmulator
import Foundation
import HTTPTypes
import Testing
import TestSupport
import ThreadDeskCore
@testable import ThreadDeskServer

/// Support hours and the away message: answers before an agent is there.
@Suite("Away message and support hours", .timeLimit(.minutes(2)))
struct AwayTests {
    /// Monday 23 November 2026, 20:00 UTC: after hours.
    static let mondayEvening = Date(timeIntervalSince1970: 1_795_464_000)
    static let awayText = "We are away until 09:00 UTC and read everything in the morning."

    static func supportMessages(_ server: Harness, _ token: String) async throws -> [String] {
        try await server.messages(token: token).filter { $0["author"]?.stringValue == "support" }.compactMap { $0["content"]?.stringValue }
    }

    @Test func theAwayMessageGoesOncePerIntervalAsSupportNeverPushedNeverInsideTheHours() async throws {
        let clock = ManualClock()
        try await withServer(gateway: true, time: .driven(by: clock, from: Self.mondayEvening)) { configuration in
            configuration.desk.hours = try? SupportHours("UTC Mon-Fri 09:00-17:00")
            configuration.desk.awayMessage = Self.awayText
        } _: { server in
            let (user, thread, device) = try await server.userWithThread()
            // Monday evening: the first message gets the away message, as support, under the team's name.
            let shown = try #require(try await server.messages(token: user.token).last)
            #expect(shown["content"]?.stringValue == Self.awayText && shown["author"]?.stringValue == "support")
            #expect(shown["authorName"]?.stringValue == "Support")
            let status = try await server.request(.get, "/v1/support-status", token: user.token)
            #expect(status.json == ["status": "away", "nextOpening": "2026-11-24T09:00:00Z"])
            // Not again within the interval.
            #expect(try await server.send("still there?", token: user.token).status == .created)
            #expect(try await Self.supportMessages(server, user.token) == [Self.awayText])

            // Tuesday 08:00, twelve hours on: once more.
            clock.advance(by: .seconds(12 * 3600))
            #expect(try await server.send("good morning", token: user.token).status == .created)
            #expect(try await Self.supportMessages(server, user.token) == [Self.awayText, Self.awayText])
            // Tuesday 10:00: support is in; no away message, whatever the interval.
            clock.advance(by: .seconds(2 * 3600))
            #expect(try await server.request(.get, "/v1/support-status", token: user.token).json == ["status": "open"])
            #expect(try await server.send("anyone?", token: user.token).status == .created)
            #expect(try await Self.supportMessages(server, user.token) == [Self.awayText, Self.awayText])

            // The away messages alerted nobody: a real reply after them is the only push.
            let reply = try server.emulator.replyAsAgent(inThread: thread, content: "Morning! Looking now.")
            try await server.settled()
            try #require(!server.apns.deliveries(to: device).isEmpty, "the reply's push")
            #expect(server.apns.deliveries(to: device).map(PushTests.messageID) == [reply.id])
            // A note or the agent's reply never gets one: only the user's messages do.
            #expect(server.emulator.messages(inThread: thread).filter { $0.content.contains(Self.awayText) }.count == 2)
        }
    }

    @Test func awayOnOverridesTheHoursAndOffGoesBack() async throws {
        try await withServer(gateway: true) { configuration in
            configuration.desk.commands = true
            configuration.desk.awayMessage = Self.awayText
        } _: { server in
            let (user, thread, _) = try await server.userWithThread()
            #expect(try await Self.supportMessages(server, user.token).isEmpty, "no hours: always in")
            let on = try await DeskTests.run(server, "away", in: thread, [.subcommand("on")])
            #expect(on.ephemeral && on.content?.contains("away") == true)
            #expect(try await server.request(.get, "/v1/support-status", token: user.token).json["status"] == "away")
            #expect(try await server.send("hello?", token: user.token).status == .created)
            #expect(try await Self.supportMessages(server, user.token) == [Self.awayText])
            try await DeskTests.run(server, "away", in: thread, [.subcommand("off")])
            #expect(try await server.request(.get, "/v1/support-status", token: user.token).json["status"] == "open")
            #expect(try await server.request(.get, "/v1/support-status").status == .unauthorized)
        }
    }

    @Test func hoursAreReadAndFollowed() throws {
        let hours = try SupportHours("Europe/Berlin Mon-Fri 09:00-17:00; Sat 22:00-02:00")
        func at(_ text: String) -> Date { try! Date(text, strategy: .iso8601) }
        #expect(hours.isOpen(at: at("2026-11-23T08:30:00Z")))  // Monday 09:30 in Berlin
        #expect(!hours.isOpen(at: at("2026-11-23T16:00:00Z")))  // 17:00 in Berlin: closed
        #expect(hours.isOpen(at: at("2026-11-28T21:30:00Z")))  // Saturday 22:30
        #expect(hours.isOpen(at: at("2026-11-29T00:30:00Z")))  // Sunday 01:30, the same night
        #expect(!hours.isOpen(at: at("2026-11-29T01:30:00Z")))  // Sunday 02:30
        #expect(hours.nextOpening(after: at("2026-11-29T01:30:00Z")) == at("2026-11-30T08:00:00Z"))  // Monday 09:00 Berlin
        #expect(hours.nextOpening(after: at("2026-11-23T08:30:00Z")) == nil)
        let wrapping = try SupportHours("UTC Sat-Mon 10:00-11:00")
        #expect(wrapping.spans.first?.days == [7, 1, 2])
        for bad in ["Mars/Base Mon 09:00-10:00", "UTC", "UTC Mon", "UTC Mon 9:00-10:00", "UTC Funday 09:00-10:00", "UTC Mon 09:00-09:00", "UTC Mon 25:00-26:00"] {
            #expect(throws: SupportHours.Problem.self, "\(bad)") { try SupportHours(bad) }
        }
        // Fixed offsets are read here; malformed ones (one crashed Foundation's parser) are refused.
        #expect(try SupportHours("UTC+02:00 Mon 09:00-10:00").timeZone.secondsFromGMT() == 7200)
        #expect(try SupportHours("GMT-5 Mon 09:00-10:00").timeZone.secondsFromGMT() == -18000)
        for bad in ["UTC-00:\u{10}1 Sat-Mon 00:00-00:\u{10}1", "UTC-00:\u{10}1 Mon 09:00-10:00", "GMT+15 Mon 09:00-10:00", "UTC+1:5 Mon 09:00-10:00", "UTC+ Mon 09:00-10:00", "UTCX Mon 09:00-10:00"] {
            #expect(throws: SupportHours.Problem.self, "\(bad)") { try SupportHours(bad) }
        }
        var environment = ["DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "1", "DISCORD_FORUM_CHANNEL_ID": "2", "APP_KEY": "k"]
        environment["SUPPORT_HOURS"] = "UTC Mon-Fri 09:00-17:00"
        environment["AWAY_MESSAGE"] = "away"
        environment["AWAY_MESSAGE_INTERVAL"] = "30m"
        let desk = try ServerConfiguration(environment: environment).desk
        #expect(desk.hours != nil && desk.awayMessage == "away" && desk.awayInterval == .seconds(1800))
        environment["AWAY_MESSAGE_INTERVAL"] = "soon"
        #expect(throws: ServerConfiguration.Problem.self) { try ServerConfiguration(environment: environment) }
    }
}
