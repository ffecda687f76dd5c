import DiscordREST
import Foundation
import ThreadDeskCore
import ThreadDeskStore

/// The user's device: its info (a note in the thread whenever it changes) and its push token.
struct DeviceService: Sendable {
    let users: UserSerializer
    let discord: DiscordClient<AnyClock>
    let ingestion: MirrorIngestion
    let now: @Sendable () -> Date

    /// Notes the device's info for the user (see `applyInstallation`).
    /// - Parameters:
    ///   - info: The app and device as the app reports them now.
    ///   - id: The user.
    /// - Returns: Whether the info differed from what the thread last showed (and so was noted).
    /// - Throws: `DiscordError` when the note cannot be posted, and the store's errors.
    func updateInstallation(_ info: InstallationInfo, for id: UserID) async throws -> Bool {
        try await users.withUser(id) { context in try await applyInstallation(info, to: &context) }
    }

    /// Posts the device-info note when `info` differs from what the thread last showed; before
    /// the thread exists, keeps it for the thread's creation.
    /// - Parameters:
    ///   - info: The app and device as the app reports them now.
    ///   - context: The user's record, held by the caller.
    /// - Returns: Whether the info differed (a thread gone or locked keeps it pending).
    /// - Throws: `DiscordError` when Discord refuses the note for another reason, or fails.
    @discardableResult
    func applyInstallation(_ info: InstallationInfo, to context: inout UserContext) async throws -> Bool {
        guard var record = context.record else { return false }
        let latest = record.pendingInstallation ?? record.installation
        guard info != latest else { return false }
        if let thread = record.threadID {
            record.pendingInstallation = info
            context.record = record
            do {
                let posted = try await discord.createMessage(
                    in: thread, .init(content: info.note, nonce: ThreadNotes.nonce("device", id: context.id, info.note)))
                try? await ingestion.ingestOwn(posted, record: record)
            } catch .api(let error) where error.threadIsGone || error.threadIsLocked {
                // The next message recreates the thread and posts the pending note there.
                return true
            } catch {
                throw error
            }
            record.installation = info
        }
        record.pendingInstallation = record.threadID == nil ? info : nil
        record.updatedAt = now()
        context.record = record
        return true
    }

    /// Sets the APNs device token replies are pushed to.
    /// - Parameters:
    ///   - token: The device token; nil: no pushes.
    ///   - environment: The APNs environment the token belongs to.
    ///   - id: The user.
    /// - Throws: The store's errors.
    func setPushToken(_ token: String?, environment: PushEnvironment?, for id: UserID) async throws {
        try await users.withUser(id, work: .brief) { context in
            context.record?.pushToken = token
            context.record?.pushEnvironment = token == nil ? nil : environment
            context.record?.updatedAt = now()
        }
    }
}
