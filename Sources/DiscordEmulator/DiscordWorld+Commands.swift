import DiscordREST
import Foundation
import Synchronization

extension DiscordWorld {
    /// `PUT /applications/{application}/guilds/{guild}/commands`: the guild's commands become
    /// `definitions`, in that order. A command the body names by id, or one keeping its name and
    /// type, keeps its id (and its version, unless its definition changed); the others are new and
    /// count against the daily creates; commands left out are gone. Past the daily limit the whole
    /// overwrite is refused (30034) and nothing changes.
    func overwriteCommands(_ definitions: [CommandDefinition]) throws(DiscordFailure) -> JSON {
        try state.withLock { state throws(DiscordFailure) -> JSON in
            let now = configuration.clock.now
            state.commandCreates.removeAll { now - $0 >= configuration.commandCreateWindow }
            var previous = state.commands
            var result: [EmulatedCommand] = []
            var created = 0
            for definition in definitions {
                let byID = definition.id.flatMap { id in previous.firstIndex { $0.id == id } }
                let byName = previous.firstIndex { $0.definition.name == definition.name && $0.definition.type == definition.type }
                if let index = byID ?? byName {
                    var command = previous.remove(at: index)
                    if command.definition.json != definition.json { command.version = ids.next() }
                    command.definition = definition
                    result.append(command)
                } else {
                    let id = ids.next()
                    result.append(EmulatedCommand(id: id, version: id, definition: definition))
                    created += 1
                }
            }
            guard state.commandCreates.count + created <= configuration.commandCreateLimit else {
                throw .dailyCommandCreates
            }
            state.commandCreates += Array(repeating: now, count: created)
            state.commands = result
            state.counters.commandOverwrites += 1
            state.counters.commandCreates += created
            return .array(result.map { $0.json(applicationID: applicationID, guildID: guildID) })
        }
    }

    /// `GET /applications/{application}/guilds/{guild}/commands`.
    func guildCommands() -> JSON {
        state.withLock { state in
            .array(state.commands.map { $0.json(applicationID: applicationID, guildID: guildID) })
        }
    }

    /// Checks the path's application and guild as Discord does before anything else.
    func checkCommandPath(application: Snowflake, guild: Snowflake?) throws(DiscordFailure) {
        guard application == applicationID else { throw .unknownApplication }
        if let guild, !isGuild(guild) { throw .unknownGuild }
    }

    /// A new role, announced as GUILD_ROLE_CREATE.
    func createRole(named name: String, permissions: UInt64 = 0) -> Snowflake {
        state.withLock { state in
            let role = EmulatedRole(id: ids.next(), name: name, position: state.roles.count + 1, permissions: permissions)
            state.roles.append(role)
            state.gateway.dispatch(
                "GUILD_ROLE_CREATE", ["guild_id": .string(guildID.description), "role": role.json], intent: .guilds,
                author: nil)
            return role.id
        }
    }

    /// `@everyone` and the roles made since, as GUILD_CREATE lists them.
    func rolesJSON(state: State) -> JSON {
        let everyone: JSON = [
            "id": .string(guildID.description), "name": "@everyone", "color": 0, "colors": EmulatedRole.noColors, "hoist": false,
            "icon": nil, "unicode_emoji": nil, "position": 0, "permissions": .string(String(state.everyonePermissions)),
            "managed": false, "mentionable": false, "flags": 0,
        ]
        return .array([everyone] + state.roles.map(\.json))
    }
}
