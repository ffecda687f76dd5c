import DiscordREST
import Deadlines
import Foundation
import Logging
import ServiceLifecycle
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// What the outbox keeps of messages Discord refused for good: their text until the user retries
/// or deletes them, their files within a cap of the user's own (`OUTBOX_USER_MAX_MIB`, beside what
/// still waits) and for `OUTBOX_FAILED_KEEP_DAYS`. Refused files never take the deployment's room
/// (`OUTBOX_MAX_MIB` counts what is still to be delivered), so users who leave them harm no one else.
struct FailedFiles: Sendable {
    let store: any UserStore
    let ingestion: MirrorIngestion
    let settings: OutboxSettings
    let logger: Logger

    /// Why a message's files went: said in its `deliveryError`, after Discord's reason.
    enum Reason {
        case overCap
        case expired(days: Int)

        var text: String {
            switch self {
            case .overCap:
                "Its files were let go (your undelivered messages' files passed what is kept for you); edit it to send the text alone."
            case .expired(let days):
                "Its files were let go (they are kept \(days) days after a refusal); edit it to send the text alone."
            }
        }
    }

    /// Under the owner's lock, after one of their messages failed: lets go of their oldest failed
    /// files until what their failed messages keep is within the cap again.
    func cap(of owner: UserID) async throws {
        var over = try await store.outboxUsage(of: owner).failedBytes - settings.maxBytesPerUser
        guard over > 0 else { return }
        for found in try await store.failedOutboxFiles(of: owner, failedBefore: nil, limit: 1000) where over > 0 {
            if try await letGo(found.id, owner: owner, because: .overCap) { over -= found.bytes }
        }
    }

    /// Under the owner's lock: drops a failed message's files and, when nothing of it reached
    /// Discord (its files were the outbox's only copy), tells the user in the message's
    /// `deliveryError` and takes the files off its row. False when it kept no files.
    @discardableResult
    func letGo(_ id: Snowflake, owner: UserID, because reason: Reason) async throws -> Bool {
        let item = try await store.outboxItem(id)
        guard try await store.dropFailedOutboxFiles(id) else { return false }
        logger.info("Let go of a refused message's files", metadata: ["user": "\(owner.logValue)", "reason": "\(reason)"])
        guard item?.postedParts.isEmpty ?? false, var row = try await store.mirroredMessages([id]).first else { return true }
        row.attachments.removeAll { OutboxFiles.index($0) != nil }
        var failure = row.deliveryError ?? DeliveryFailure(code: "refused", message: "Discord refused this message.")
        failure.message += " " + reason.text
        row.deliveryError = failure
        try await ingestion.saveOutboxChange(row, owner: owner)
        return true
    }
}

/// Lets go of the files of messages refused more than `OUTBOX_FAILED_KEEP_DAYS` ago: at start,
/// then every `OutboxSettings.failedSweep` on the server's clock, asleep in between. Each under its
/// owner's lock, so an edit that sends the message again is ordered with it. Replicas may both run
/// it: a file let go once is not let go again.
struct FailedFilesExpiry: Service, CustomStringConvertible {
    let files: FailedFiles
    let users: UserSerializer
    let logger: Logger
    let time: ServerTime
    /// Messages read from the store at a time.
    var batch = 100
    private let work: BackgroundWork
    static let workName = "outbox-failed-files"

    init(files: FailedFiles, users: UserSerializer, logger: Logger, time: ServerTime, work: BackgroundWork = .untracked) {
        (self.files, self.users, self.logger, self.time, self.work) = (files, users, logger, time, work)
        work.begin(Self.workName)
    }

    var description: String { "FailedFilesExpiry(keeps refused files \(files.settings.failedKeep))" }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await round()
                guard (try? await work.endSleepThenBegin(Self.workName, for: files.settings.failedSweep, on: time)) != nil else { return }
            }
        }
    }

    /// Lets go of every file refused before the cutoff; returns how many messages lost theirs.
    @discardableResult
    func round() async -> Int {
        let cutoff = time.now().addingTimeInterval(-(files.settings.failedKeep / .seconds(1)))
        let days = Int((files.settings.failedKeep / .seconds(86_400)).rounded())
        var count = 0
        do {
            while !Task.isCancelled {
                let found = try await files.store.failedOutboxFiles(of: nil, failedBefore: cutoff, limit: batch)
                var dropped = 0
                for item in found {
                    if try await users.withUser(item.owner, { _ in try await files.letGo(item.id, owner: item.owner, because: .expired(days: days)) }) {
                        dropped += 1
                    }
                }
                count += dropped
                // A batch of which nothing went (each changed meanwhile) is read again no more.
                if found.count < batch || dropped == 0 { break }
            }
        } catch {
            logger.warning("Could not let go of refused messages' files; the next round tries again", metadata: ["error": "\(error)"])
        }
        return count
    }
}
