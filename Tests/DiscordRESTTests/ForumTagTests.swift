import DiscordEmulator
import DiscordREST
import Foundation
import Testing

/// A forum's tags (`available_tags`) and a thread's (`applied_tags`), as Discord keeps them.
@Suite("Forum tags against the emulator")
struct ForumTagTests {
    @Test func aForumsTagsAreReplacedAsAListKeepingTheIdsOfThoseKept() async throws {
        try await withDiscord { _, client, endpoints in
            let before = try #require(try await client.channel(endpoints.forumChannelID).availableTags)
            let kept = try #require(before.first)
            let edited = try await client.modifyForumTags(
                endpoints.forumChannelID, [DiscordForumTagEdit(id: kept.id, name: kept.name), DiscordForumTagEdit(name: "needs reply")])
            let tags = try #require(edited.availableTags)
            #expect(tags.map(\.name) == [kept.name, "needs reply"])
            #expect(tags[0].id == kept.id)
            #expect(tags[1].id != kept.id && !before.map(\.id).contains(tags[1].id))
            // Left out of the list: gone, also from the threads that had it.
            let removed = before[1]
            let thread = try await client.startForumThread(
                in: endpoints.forumChannelID,
                DiscordForumThreadCreate(name: "tagged", appliedTags: [kept.id], message: DiscordMessageCreate(content: "hi")))
            #expect(thread.channel.appliedTags == [kept.id])
            #expect(!tags.map(\.id).contains(removed.id))
        }
    }

    @Test func aThreadTakesAtMostFiveTagsAndAForumTwenty() async throws {
        try await withDiscord { _, client, endpoints in
            let many = (0..<21).map { DiscordForumTagEdit(name: "tag \($0)") }
            await #expect(throws: DiscordError.self) { _ = try await client.modifyForumTags(endpoints.forumChannelID, many) }
            let twenty = try await client.modifyForumTags(endpoints.forumChannelID, Array(many.prefix(20)))
            let ids = try #require(twenty.availableTags).map(\.id)
            #expect(ids.count == 20)
            let thread = try await client.startForumThread(in: endpoints.forumChannelID, .named("a thread", "hello"))
            await #expect(throws: DiscordError.self) { _ = try await client.modifyThread(thread.channel.id, appliedTags: Array(ids.prefix(6))) }
            let tagged = try await client.modifyThread(thread.channel.id, appliedTags: Array(ids.prefix(5)))
            #expect(tagged.appliedTags == Array(ids.prefix(5)))
            // Dropping a tag from the forum drops it from the thread.
            let fewer = try await client.modifyForumTags(
                endpoints.forumChannelID, twenty.availableTags!.dropFirst().map { DiscordForumTagEdit(id: $0.id, name: $0.name) })
            #expect(fewer.availableTags?.count == 19)
            #expect(try await client.channel(thread.channel.id).appliedTags == Array(ids[1..<5]))
        }
    }
}
