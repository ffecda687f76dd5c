import DiscordEmulator
import Foundation
import Synchronization
import Testing

@testable import ThreadDeskServer

/// The curated answers kept in the store: a server that starts suggests from them at once, before
/// (and whether or not) it has read the FAQ forum again.
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
        // has never heard of it): the answers are there from the start, the tag's name included.
        let earlierForum = try #require(forum.withLock { $0 })
        try await withServer(store: storeURL, prepare: .init { _, configuration in configuration.faqChannelID = earlierForum }) { server in
            let user = try await server.session()
            #expect(try await SuggestionTests.titles(server, "conect tv", token: user.token) == ["I can't connect my TV"])
            #expect(try await SuggestionTests.titles(server, "television", token: user.token) == ["I can't connect my TV"])
            #expect(try await SuggestionTests.titles(server, "subscription", token: user.token) == ["Cancel my subscription"])
            #expect(server.emulator.counters.requests("GET", "/channels/{channel_id}/messages/{message_id}") == 0)
        }
        // Another forum's snapshot is no answer in this one.
        try await withServer(store: storeURL, prepare: .init { emulator, configuration in configuration.faqChannelID = emulator.faqChannelID }) { server in
            let user = try await server.session()
            try await server.settled()
            #expect(try await SuggestionTests.titles(server, "conect tv", token: user.token).isEmpty)
        }
    }

    /// A read fetches every starter at first; a gap during a read makes the next fetch only what
    /// that read had fetched before the gap; a gap between reads makes the next fetch all.
    @Test func aGapDuringAReadMakesOnlyWhatItHadReadStale() {
        let progress = ReadProgress()
        #expect(progress.begin() == nil)
        progress.read("1")
        progress.read("2")
        progress.gap()
        progress.read("3")
        progress.end()
        #expect(progress.begin() == ["1", "2"])
        progress.end()
        #expect(progress.begin() == [])
        progress.end()
        progress.gap()
        #expect(progress.begin() == nil)
        progress.read("1")
        progress.gap()
        progress.read("2")
        progress.gap()
        progress.end()
        #expect(progress.begin() == ["1", "2"])
        progress.end()
    }
}
