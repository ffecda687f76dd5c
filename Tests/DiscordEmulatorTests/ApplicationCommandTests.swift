import DiscordEmulator
import DiscordREST
import TestSupport
import Testing

@Suite("Discord emulator application commands", .timeLimit(.minutes(1)))
struct ApplicationCommandTests {
    @Test func aBulkOverwriteKeepsIDsByNameAndCountsOnlyCreates() async throws {
        try await Harness.withEmulator { emulator, http in
            let first = try await http.register(
                #"[{"name": "close", "description": "Close it"}, {"name": "status", "description": "Show status"}]"#)
            let closeID = try #require(first.first?["id"]?.stringValue)
            #expect(first.map { $0["name"] } == ["close", "status"])
            #expect(first.first?["application_id"]?.stringValue == http.endpoints.applicationID)
            #expect(first.first?["guild_id"]?.stringValue == http.endpoints.guildID)
            #expect(first.first?["default_member_permissions"] == .null)
            #expect(emulator.counters.commandOverwrites == 1 && emulator.counters.commandCreates == 2)

            // `close` changes its description (same id, new version), `status` goes, `note` is new.
            let second = try await http.register(
                #"[{"name": "close", "description": "Close the thread"}, {"name": "note", "description": "Add a note"}]"#)
            #expect(second.first?["id"]?.stringValue == closeID)
            #expect(second.first?["version"] != first.first?["version"])
            #expect(second.map { $0["name"] } == ["close", "note"])
            #expect(emulator.counters.commandOverwrites == 2 && emulator.counters.commandCreates == 3)

            // Unchanged: same version. Named by id (a JSON number past 2^53, as stock libraries send
            // ids), a command keeps its id under a new name.
            let third = try await http.register(
                #"[{"id": \#(closeID), "name": "shut", "description": "Close the thread"}, {"name": "note", "description": "Add a note"}]"#)
            #expect(third.first?["id"]?.stringValue == closeID && third.first?["name"] == "shut")
            #expect(third.last?["version"] == second.last?["version"])
            #expect(emulator.counters.commandCreates == 3)

            let listed = try await http.call(.GET, http.guildCommandsPath)
            #expect(listed.json?.arrayValue?.map { $0["name"] } == ["shut", "note"])
            #expect(emulator.commands.map(\.name) == ["shut", "note"])
            #expect(emulator.commands.first?.id == closeID)
            let global = try await http.call(.GET, "/applications/\(http.endpoints.applicationID)/commands")
            #expect(global.status == 200 && global.json == [])
        }
    }

    @Test func anotherApplicationOrGuildIsUnknown() async throws {
        try await Harness.withEmulator { _, http in
            let application = try await http.call(.GET, "/applications/1234567/guilds/\(http.endpoints.guildID)/commands")
            #expect(application.status == 404 && application.code == 10002)
            let guild = try await http.call(.PUT, "/applications/\(http.endpoints.applicationID)/guilds/1234567/commands", body: "[]")
            #expect(guild.status == 404 && guild.code == 10004)
            let global = try await http.call(.GET, "/applications/1234567/commands")
            #expect(global.status == 404 && global.code == 10002)
        }
    }

    /// Each body breaks one of Discord's rules; the 50035 names the field where Discord does.
    @Test(arguments: [
        (#"[{"name": "Close", "description": "d"}]"#, ["0", "name"]),
        (#"[{"name": "close now", "description": "d"}]"#, ["0", "name"]),
        (#"[{"name": "close"}]"#, ["0", "description"]),
        (#"[{"name": "close", "description": "\#(String(repeating: "x", count: 101))"}]"#, ["0", "description"]),
        (#"[{"name": "a", "description": "d"}, {"name": "a", "description": "e"}]"#, ["1", "name"]),
        (#"[{"name": "close", "description": "d", "options": [\#((0..<26).map { #"{"type": 3, "name": "o\#($0)", "description": "d"}"# }.joined(separator: ","))]}]"#, ["0", "options"]),
        (#"[{"name": "close", "description": "d", "options": [{"type": 3, "name": "a", "description": "d"}, {"type": 3, "name": "b", "description": "d", "required": true}]}]"#, ["0", "options"]),
        (#"[{"name": "close", "description": "d", "options": [{"type": 3, "name": "a", "description": "d", "autocomplete": true, "choices": [{"name": "x", "value": "x"}]}]}]"#, ["0", "options", "0", "autocomplete"]),
        (#"[{"name": "close", "description": "d", "options": [{"type": 3, "name": "a", "description": "d", "choices": [\#((0..<26).map { #"{"name": "c\#($0)", "value": "v"}"# }.joined(separator: ","))]}]}]"#, ["0", "options", "0", "choices"]),
        (#"[{"name": "close", "description": "d", "options": [{"type": 12, "name": "a", "description": "d"}]}]"#, ["0", "options", "0", "type"]),
        (#"[{"name": "close", "description": "d", "options": [{"type": 1, "name": "a", "description": "d", "options": [{"type": 1, "name": "b", "description": "d"}]}]}]"#, ["0", "options", "0", "options"]),
        (#"[{"name": "close", "description": "d", "options": [{"type": 1, "name": "a", "description": "d"}, {"type": 3, "name": "b", "description": "d"}]}]"#, ["0", "options"]),
        (#"[{"name": "close", "description": "d", "default_member_permissions": "manage"}]"#, ["0", "default_member_permissions"]),
        (#"[{"name": "close", "description": "d", "contexts": [7]}]"#, ["0", "contexts", "0"]),
    ])
    func anInvalidCommandIsRefusedWithAFormError(body: String, path: [String]) async throws {
        try await Harness.withEmulator { emulator, http in
            let answer = try await http.call(.PUT, http.guildCommandsPath, body: body)
            #expect(answer.status == 400 && answer.code == 50035)
            var node = answer.json?["errors"]
            for key in path { node = node?[key] }
            #expect(node?["_errors"]?[0]?["code"]?.stringValue != nil, "no error at \(path): \(String(describing: answer.json))")
            #expect(emulator.commands.isEmpty && emulator.counters.commandOverwrites == 0)
        }
    }

    @Test func subcommandsContextsAndPermissionsAreEchoedAsDiscordEchoesThem() async throws {
        try await Harness.withEmulator { emulator, http in
            let commands = try await http.register(supportCommands)
            let ticket = try #require(commands.first { $0["name"] == "ticket" })
            #expect(ticket["options"]?[0]?["type"] == 1 && ticket["options"]?[0]?["options"]?[0]?["name"] == "agent")
            let purge = try #require(commands.first { $0["name"] == "purge" })
            #expect(purge["default_member_permissions"] == "8192" && purge["contexts"] == [0])
            // Discord's schema has the bitfield as an integer, its docs as a string: both are read.
            let numeric = try await http.register(#"[{"name": "purge", "description": "d", "default_member_permissions": 8192}]"#)
            #expect(numeric.first?["default_member_permissions"] == "8192")
            #expect(emulator.commands.map(\.defaultMemberPermissions) == ["8192"])
        }
    }

    @Test func creatingPastTheDailyLimitIsRefusedUntilADayHasPassed() async throws {
        let clock = ManualClock()
        try await Harness.withEmulator({ $0.clock = .init(clock) }) { emulator, http in
            func commands(_ prefix: String, _ count: Int) -> String {
                "[" + (0..<count).map { #"{"name": "\#(prefix)\#($0)", "description": "d"}"# }.joined(separator: ",") + "]"
            }
            try await http.register(commands("a", 100))
            try await http.register(commands("b", 100))
            #expect(emulator.counters.commandCreates == 200)
            // Discord's 201st create of the day: refused, and nothing changes.
            let refused = try await http.call(.PUT, http.guildCommandsPath, body: commands("c", 1))
            #expect(refused.status == 400 && refused.code == 30034)
            #expect(emulator.commands.first?.name == "b0" && emulator.commands.count == 100)
            // Keeping commands creates nothing, so that still works.
            try await http.register(commands("b", 100))
            clock.advance(by: .seconds(86_399))
            #expect(try await http.call(.PUT, http.guildCommandsPath, body: commands("c", 1)).code == 30034)
            clock.advance(by: .seconds(1))
            let later = try await http.register(commands("c", 1))
            #expect(later.first?["name"] == "c0")
            #expect(emulator.counters.commandCreates == 201 && emulator.counters.commandOverwrites == 4)
        }
    }
}
