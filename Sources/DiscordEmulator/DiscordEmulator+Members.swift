import DiscordREST
import Foundation
import Hummingbird
import Synchronization

/// The control surface for the guild's people: members with roles, what roles may do, and the
/// overwrites of a channel, so that a test can play a stranger beside an agent.
extension DiscordEmulator {
    /// A new member (a person) with these roles (ids from `createRole`), whose Discord client is
    /// in `locale` (their interactions carry it): their user id.
    public func addMember(named name: String, roles: [String] = [], locale: String = "en-US") throws(DiscordFailure) -> String {
        let id = try world.addMember(named: name, roles: try roles.map(Self.role))
        world.state.withLock { $0.memberLocales[id] = locale }
        return id.description
    }

    /// A member's roles become `roles`.
    public func setRoles(of member: String, to roles: [String]) throws(DiscordFailure) {
        try world.setRoles(of: try Self.member(member), to: try roles.map(Self.role))
    }

    /// What a role (the guild's id: `@everyone`) may do across the guild.
    public func setRolePermissions(_ role: String, _ permissions: UInt64) throws(DiscordFailure) {
        try world.setRolePermissions(try Self.role(role), permissions)
    }

    /// The overwrite of a role (`type` 0; the guild's id is `@everyone`) or a member (1) on a guild
    /// channel; both bitfields 0 removes it.
    public func setOverwrite(on channelID: String, for target: String, type: Int = 0, allow: UInt64 = 0, deny: UInt64 = 0) throws(DiscordFailure) {
        try world.setOverwrite(on: try Self.snowflake(channelID), target: try Self.role(target), type: type, allow: allow, deny: deny)
    }

    /// An admin allows the application's commands to a role, a member or everyone (the guild's
    /// id) under Server Settings → Integrations: Discord then offers them whatever the commands'
    /// `default_member_permissions` say.
    public func allowCommandsInIntegrations(for target: String) throws(DiscordFailure) {
        let id = try Self.role(target)
        world.state.withLock { _ = $0.commandsAllowedFor.insert(id) }
    }

    /// A member's permissions in a channel, as interactions carry them.
    public func permissions(of member: String, in channelID: String) throws(DiscordFailure) -> UInt64 {
        let (member, channel) = (try Self.member(member), try Self.snowflake(channelID))
        return world.state.withLock { world.permissions(of: member, in: channel, state: $0) }
    }

    static func member(_ value: String) throws(DiscordFailure) -> Snowflake {
        guard let id = Snowflake(value) else { throw .unknownMember }
        return id
    }

    static func role(_ value: String) throws(DiscordFailure) -> Snowflake {
        guard let id = Snowflake(value) else { throw .unknownRole }
        return id
    }

    struct MemberRequest: Decodable {
        var name: String
        var roles: [String]?
        var locale: String?
    }

    struct RolesRequest: Decodable { var roles: [String] }

    struct BitsRequest: Decodable {
        var permissions: String?
        var type: Int?
        var allow: String?
        var deny: String?
    }

    struct FAQPostRequest: Decodable {
        var title: String
        var answer: String
        var tags: [String]?
        var member: String?
    }

    /// The same over HTTP under `/_emulator`.
    func addMemberControlRoutes(to router: Router<BasicRequestContext>) {
        let control = router.group("/_emulator")
        control.post("/members") { request, context in
            try await Self.answer {
                let body = try await request.decode(as: MemberRequest.self, context: context)
                return ["id": try self.addMember(named: body.name, roles: body.roles ?? [], locale: body.locale ?? "en-US")]
            }
        }
        control.put("/members/:id/roles") { request, context in
            try await Self.answer {
                let body = try await request.decode(as: RolesRequest.self, context: context)
                try self.setRoles(of: context.parameters.get("id") ?? "", to: body.roles)
                return ["roles": body.roles]
            }
        }
        control.put("/roles/:id/permissions") { request, context in
            try await Self.answer {
                let body = try await request.decode(as: BitsRequest.self, context: context)
                try self.setRolePermissions(context.parameters.get("id") ?? "", Self.bits(body.permissions))
                return ["permissions": String(Self.bits(body.permissions))]
            }
        }
        control.put("/channels/:channel/overwrites/:target") { request, context in
            try await Self.answer {
                let body = try await request.decode(as: BitsRequest.self, context: context)
                try self.setOverwrite(
                    on: context.parameters.get("channel") ?? "", for: context.parameters.get("target") ?? "", type: body.type ?? 0,
                    allow: Self.bits(body.allow), deny: Self.bits(body.deny))
                return ["allow": String(Self.bits(body.allow)), "deny": String(Self.bits(body.deny))]
            }
        }
        control.post("/integrations/commands/:target") { _, context in
            try await Self.answer {
                try self.allowCommandsInIntegrations(for: context.parameters.get("target") ?? "")
                return ["allowed": context.parameters.get("target") ?? ""]
            }
        }
        control.post("/faq/posts") { request, context in
            try await Self.answer {
                let body = try await request.decode(as: FAQPostRequest.self, context: context)
                return ["id": try self.postFAQ(title: body.title, answer: body.answer, tags: body.tags ?? [], as: body.member)]
            }
        }
    }

    private static func bits(_ text: String?) -> UInt64 { text.flatMap { UInt64($0) } ?? 0 }
}
