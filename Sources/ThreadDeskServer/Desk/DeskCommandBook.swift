import DiscordREST
import ThreadDeskCore

/// Slash commands of a feature that stands above the desk (crash reports): the desk registers
/// them with its own, checks who may use them and where, as for every command, and hands them
/// over; the feature answers from the store, at once and only to the agent (ephemeral).
protocol DeskCommandBook: Sendable {
    /// The commands as registered (the desk sets who may see them).
    var definitions: [DiscordApplicationCommand] { get }
    /// The answer to one of `definitions`, used in `thread` (of `owner`, in `app`).
    func answer(_ data: DiscordInteraction.CommandData, in thread: Snowflake, owner: UserID, app: AppSettings) async throws -> String
}
