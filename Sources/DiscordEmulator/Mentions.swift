import DiscordREST
import Foundation

/// What a message's content would ping, after `allowed_mentions` has had its say.
struct Mentions {
    var everyone = false
    var users: [Snowflake] = []
    /// Roles pinged (`<@&id>`): with `roles` in `parse`, or listed in `roles`.
    var roles: [Snowflake] = []

    init(content: String, allowed: JSON?) {
        let parse = Set((allowed?["parse"]?.arrayValue ?? []).compactMap(\.stringValue))
        // Ids as strings or numbers, as everywhere in a body.
        let listedUsers = Set(
            (allowed?["users"]?.arrayValue ?? []).compactMap { try? RESTPayloads.snowflake(json: $0, field: "users").description })
        let everyoneAllowed = allowed == nil || parse.contains("everyone")
        let usersAllowed = allowed == nil || parse.contains("users")

        everyone = everyoneAllowed && (content.contains("@everyone") || content.contains("@here"))
        var found: [Snowflake] = []
        var rest = Substring(content)
        while let start = rest.range(of: "<@") {
            rest = rest[start.upperBound...]
            if rest.first == "!" { rest = rest.dropFirst() }
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            rest = rest[digits.endIndex...]
            guard rest.first == ">", let id = Snowflake(String(digits)) else { continue }
            if usersAllowed || listedUsers.contains(id.description), !found.contains(id) { found.append(id) }
        }
        users = found
        let listedRoles = Set(
            (allowed?["roles"]?.arrayValue ?? []).compactMap { try? RESTPayloads.snowflake(json: $0, field: "roles").description })
        let rolesAllowed = allowed == nil || parse.contains("roles")
        var pinged: [Snowflake] = []
        rest = Substring(content)
        while let start = rest.range(of: "<@&") {
            rest = rest[start.upperBound...]
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            rest = rest[digits.endIndex...]
            guard rest.first == ">", let id = Snowflake(String(digits)) else { continue }
            if rolesAllowed || listedRoles.contains(id.description), !pinged.contains(id) { pinged.append(id) }
        }
        roles = pinged
    }
}
