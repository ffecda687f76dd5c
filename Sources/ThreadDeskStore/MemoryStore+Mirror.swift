import DiscordREST
import Foundation
import Synchronization
import ThreadDeskCore

extension MemoryStore {
    public func mirrorThread(_ id: Snowflake) async throws -> MirrorThread? {
        mirror.withLock { $0.threads[id] }
    }

    public func saveMirrorThread(_ thread: MirrorThread) async throws {
        mirror.withLock { $0.threads[thread.id] = thread }
    }

    public func mirroredMessages(_ ids: [Snowflake]) async throws -> [MirroredMessage] {
        mirror.withLock { state in ids.compactMap { state.messages[$0] } }
    }

    public func saveMirroredMessages(_ messages: [MirroredMessage]) async throws {
        mirror.withLock { state in
            for message in messages { state.messages[message.id] = message }
        }
    }

    public func saveMirrorAlias(discordID: Snowflake, messageID: Snowflake, owner: UserID) async throws {
        mirror.withLock { state in
            if state.aliases[discordID] == nil { state.aliases[discordID] = (messageID, owner) }
        }
    }

    public func mirrorAliases(_ discordIDs: [Snowflake]) async throws -> [Snowflake: Snowflake] {
        mirror.withLock { state in
            var found: [Snowflake: Snowflake] = [:]
            for id in discordIDs { if let alias = state.aliases[id] { found[id] = alias.message } }
            return found
        }
    }

    public func discordIDs(of messageIDs: [Snowflake]) async throws -> [Snowflake: Snowflake] {
        let wanted = Set(messageIDs)
        return mirror.withLock { state in
            var found: [Snowflake: Snowflake] = [:]
            for (discord, alias) in state.aliases where wanted.contains(alias.message) { found[alias.message] = discord }
            return found
        }
    }

    public func moveMirroredMessages(from: Snowflake, to: Snowflake) async throws {
        mirror.withLock { state in
            for (id, message) in state.messages where message.threadID == from { state.messages[id]?.threadID = to }
            state.threads[from] = nil
        }
    }

    public func mirrorPage(thread: Snowflake, _ cursor: MirrorCursor, limit: Int) async throws -> MirrorPage {
        let shown = mirror.withLock { state in
            state.messages.values.filter { $0.threadID == thread && $0.visible && !$0.deleted }.sorted { $0.id < $1.id }
        }
        switch cursor {
        case .after(let after, let before):
            let range = shown.filter { message in message.id > after && before.map { message.id < $0 } ?? true }
            return MirrorPage(messages: Array(range.prefix(limit)), hasMore: range.count > limit)
        case .before(let before):
            let range = shown.filter { message in before.map { message.id < $0 } ?? true }
            return MirrorPage(messages: Array(range.suffix(limit)), hasMore: range.count > limit)
        }
    }

    public func mirroredIDs(thread: Snowflake, from lowest: Snowflake) async throws -> [Snowflake] {
        mirror.withLock { state in
            state.messages.values.filter { $0.threadID == thread && !$0.deleted && $0.id >= lowest }.map(\.id).sorted()
        }
    }

    public func mirroredParts(of first: Snowflake) async throws -> [MirroredMessage] {
        mirror.withLock { state in
            state.messages.values.filter { $0.id == first || $0.partOf == first }.sorted { $0.id < $1.id }
        }
    }

    public func mirroredMessage(withAttachment id: Snowflake, thread: Snowflake) async throws -> MirroredMessage? {
        mirror.withLock { state in
            state.messages.values.first { $0.threadID == thread && !$0.deleted && $0.attachments.contains { $0.id == id } }
        }
    }

    public func supportMessageCount(thread: Snowflake, after: Snowflake?) async throws -> Int {
        mirror.withLock { state in
            state.messages.values.count { message in message.threadID == thread && message.isSupportReply && after.map { message.id > $0 } ?? true }
        }
    }

    public func duePushes(at now: Date, limit: Int) async throws -> [DuePush] {
        mirror.withLock { state in
            state.messages.values.compactMap { message -> (Date, DuePush)? in
                guard case .pending(_, let next) = message.push, next <= now,
                    let owner = state.threads[message.threadID]?.owner
                else { return nil }
                return (next, DuePush(owner: owner, threadID: message.threadID, messageID: message.id))
            }
            .sorted { ($0.0, $0.1.messageID) < ($1.0, $1.1.messageID) }.prefix(limit).map(\.1)
        }
    }

    public func nextPushDue() async throws -> Date? {
        mirror.withLock { state in
            state.messages.values.compactMap { message -> Date? in
                if case .pending(_, let next) = message.push { return next }
                return nil
            }.min()
        }
    }

    public func activeMirrorThreads(since date: Date) async throws -> [MirrorThread] {
        mirror.withLock { state in state.threads.values.filter { !$0.gone && $0.lastActivity >= date }.sorted { $0.id < $1.id } }
    }

    public func nextEventSequences(_ count: Int) async throws -> [Int64] {
        mirror.withLock { state in
            let first = state.eventSequence + 1
            state.eventSequence += Int64(max(0, count))
            return Array(first..<(first + Int64(max(0, count))))
        }
    }

    public func mirrorEvents(owner: UserID, after sequence: Int64, limit: Int) async throws -> [MirroredMessage] {
        mirror.withLock { state in
            Array(
                state.messages.values.filter { $0.eventSeq > sequence && state.threads[$0.threadID]?.owner == owner }
                    .sorted { $0.eventSeq < $1.eventSeq }.prefix(limit))
        }
    }

    public func latestEventSequence(owner: UserID) async throws -> Int64 {
        mirror.withLock { state in
            state.messages.values.filter { state.threads[$0.threadID]?.owner == owner }.map(\.eventSeq).max() ?? 0
        }
    }

    public func exclusively<T: Sendable>(_ job: String, _ body: () async throws -> T) async throws -> T? {
        try await jobs.exclusively(job, body)
    }
}
