import DiscordEmulator
import DiscordREST
import Foundation
import Synchronization
import Testing
import ThreadDeskCore

@testable import ThreadDeskServer

/// The curated answers kept in the store: a server that starts suggests from them before (and
/// whether or not) it has read the FAQ forum again.
@Suite("Suggestions kept in the store", .timeLimit(.minutes(2)))
struct FAQSnapshotTests {
    @Test func aServerThatStartsAgainSuggestsFromTheStoreBeforeDiscordAnswers() async throws {
        let storeURL = "sqlite://\(temporaryStorePath())"
        let forum = Mutex<String?>(nil)
        let prepare = EmulatorPreparation { emulator, configuration in
            configuration.faqChannelID = emulator.faqChannelID
            forum.withLock { $0 = emulator.faqChannelID }
            _ = try? emulator.postFAQ(title: "I can't connect my TV", answer: "Add it by hand.", tags: ["television"])
            _ = try? emulator.postFAQ(title: "Cancel my subscription", answer: "The App Store manages it.")
        }
        try await withServer(store: storeURL, prepare: prepare) { server in
            let user = try await server.session()
            try await server.settled()
            #expect(try await SuggestionTests.titles(server, "conect tv", token: user.token) == ["I can't connect my TV"])
        }
        // Started again on the same store, where that forum cannot be read at all (this Discord
        // has never heard of it): the answers are there, the tag's name included, though every
        // read of the forum fails.
        let earlierForum = try #require(forum.withLock { $0 })
        try await withServer(store: storeURL, prepare: .init { _, configuration in configuration.faqChannelID = earlierForum }) { server in
            let user = try await server.session()
            try await server.settled()
            #expect(server.emulator.counters.requests("GET", "/channels/{channel_id}") >= 1, "the forum asked for, in vain")
            #expect(try await SuggestionTests.titles(server, "conect tv", token: user.token) == ["I can't connect my TV"])
            #expect(try await SuggestionTests.titles(server, "television", token: user.token) == ["I can't connect my TV"])
            #expect(try await SuggestionTests.titles(server, "subscription", token: user.token) == ["Cancel my subscription"])
            #expect(server.emulator.counters.requests("GET", "/channels/{channel_id}/messages/{message_id}") == 0)
        }
        // Another forum's snapshot is no answer in this one (unreadable too, so only the snapshot
        // could answer).
        try await withServer(store: storeURL, prepare: .init { _, configuration in configuration.faqChannelID = "1234567890123456789" }) { server in
            let user = try await server.session()
            try await server.settled()
            #expect(try await SuggestionTests.titles(server, "conect tv", token: user.token).isEmpty)
            #expect(try await SuggestionTests.titles(server, "subscription", token: user.token).isEmpty)
        }
    }

    /// A starter fetched since the last gap is current; a gap makes nothing current; a fetch that a
    /// gap overtook counts for nothing; a failed read keeps what it fetched.
    @Test func whatIsCurrentFollowsTheGaps() {
        let progress = ReadProgress()
        var lowered = 0
        var raised = 0
        progress.begin()
        #expect(!progress.isCurrent("1"))
        progress.fetched("1", generation: progress.generation)
        let before = progress.generation
        progress.gap { raised += 1 }
        // "2" was being fetched when the gap came: not current; "3" after it: current.
        progress.fetched("2", generation: before)
        progress.fetched("3", generation: progress.generation)
        #expect(!progress.isCurrent("1") && !progress.isCurrent("2") && progress.isCurrent("3"))
        // The gap asked for another read: the pending work stays up.
        progress.endRead { lowered += 1 }
        #expect(raised == 1 && lowered == 0)
        progress.begin()
        progress.fetched("1", generation: progress.generation)
        // A read that fails part-way lowers (it is tried again) and keeps what it fetched.
        progress.endRead(failed: true) { lowered += 1 }
        #expect(lowered == 1 && progress.isCurrent("1") && progress.isCurrent("3"))
        progress.begin()
        progress.endRead { lowered += 1 }
        #expect(lowered == 2)
    }

    /// A first read hands its answers to the book as it goes: what the gateway deleted or changed
    /// meanwhile stays as the gateway said.
    @Test func answersAFirstReadHandsOverDoNotUndoTheGateway() async {
        let book = FAQBook()
        let now = Date()
        await book.beginLoad()
        await book.post("2", title: "Deleted meanwhile", tagIDs: [], at: now)
        await book.remove("2")
        await book.post("3", title: "Renamed meanwhile", tagIDs: [], at: now)
        await book.starter("3", content: "The gateway's words.", at: now)
        let read: [String: FAQBook.Post] = [
            "1": .init(title: "Connect the TV", tagIDs: [], starter: "Add it by hand."),
            "2": .init(title: "Deleted meanwhile", tagIDs: [], starter: "Gone."),
            "3": .init(title: "The read's title", tagIDs: [], starter: "The read's words."),
        ]
        await book.add(read, at: now)
        #expect(await book.suggestions(for: "tv").map(\.id) == ["1"])
        #expect(await book.answer("2") == nil)
        #expect(await book.answer("3")?.text == "The gateway's words.")
        await book.load(read, at: now)
        #expect(await book.answer("2") == nil)
        #expect(await book.answer("3")?.title == "Renamed meanwhile")
        #expect(await book.count == 2)
    }

    /// A snapshot kept by a version before articles had `updatedAt` still restores; its articles
    /// say their post's creation until a change is heard.
    @Test func aSnapshotFromBeforeUpdatedAtRestores() async throws {
        let post = "1300000000000000000"
        let old = #"{"forum":"9","posts":{"\#(post)":{"title":"Connect the TV","tagIDs":["7"],"starter":"Add it by hand.","attachments":[]}},"tagNames":{"7":"television"}}"#
        let snapshot = try JSONDecoder().decode(FAQBook.Snapshot.self, from: Data(old.utf8))
        #expect(snapshot.posts[post]?.updatedAt == nil)
        let book = FAQBook()
        #expect(await book.restore(snapshot))
        let listed = await book.articles()
        #expect(listed.byTitle.map(\.title) == ["Connect the TV"])
        #expect(listed.byTitle.first?.updatedAt == Snowflake(post)?.date)
        #expect(listed.byTitle.first?.tags == ["television"])
        // The same words read again move nothing; an edit moves it to Discord's stamp of the edit.
        let edited = Date(timeIntervalSince1970: 1_900_000_000)
        await book.starter(post, content: "Add it by hand.", editedAt: Snowflake(post)?.date, at: edited)
        #expect(await book.articles().byTitle.first?.updatedAt == Snowflake(post)?.date)
        await book.starter(post, content: "Add it by hand, then restart it.", editedAt: edited, at: edited.addingTimeInterval(5))
        #expect(await book.articles().byTitle.first?.updatedAt == edited)
        // A new title is stamped by the server's clock: Discord stamps no change of a thread.
        await book.post(post, title: "Connect a TV", tagIDs: ["7"], at: edited.addingTimeInterval(60))
        #expect(await book.articles().byTitle.first?.updatedAt == edited.addingTimeInterval(60))
        // And the snapshot written now keeps it.
        let kept = try JSONDecoder().decode(FAQBook.Snapshot.self, from: JSONEncoder().encode(await book.snapshot(forum: "9")))
        #expect(kept.posts[post]?.updatedAt == edited.addingTimeInterval(60))
    }
}
