import DiscordEmulator
import Foundation
import Observation
import Testing
import TestSupport
import ThreadDeskKit
import ThreadDeskServer

/// The user's context from the SDK through the server to the agent's desk: attributes and an event
/// set while no session existed, kept on the device across a relaunch, sent with the session, and
/// shown by the `/user` card and the thread's first note.
@Suite("The user's context from the SDK", .timeLimit(.minutes(3)))
struct SDKUserContextTests {
    /// The device's files for `device`: the session, outbox and user context a relaunch finds again.
    static func client(_ server: SDKHarness, device: String = "phone") -> ThreadDeskClient {
        server.client(device: device) {
            $0.userContext = FileUserContextStore(url: server.folder.appendingPathComponent("\(device)/user-context.json"))
        }
    }

    @Test func attributesAndActivitySetOfflineReachTheUserCard() async throws {
        try await withSDKServer({ $0.desk.commands = true }) { server in
            // Before any session: checked, kept on the device, nothing sent.
            let first = Self.client(server)
            try await first.setAttributes(["plan": "free", "seats": 3, "coupon": "XMAS"])
            try await first.setAttributes(["plan": "pro", "trial_ends": Date(timeIntervalSince1970: 1_798_675_200), "coupon": nil])
            let event = try await first.track("export_failed", properties: ["format": "pdf"])
            #expect(await first.sendUserContext().failure?.kind == .noSession)

            // The app launched again: what waits goes with the session, the event under its id.
            let client = Self.client(server)
            #expect(try await client.pendingUserContext().activity.map(\.id) == [event.id])
            try await client.open()
            let report = await client.sendUserContext()
            #expect(report.refused.isEmpty && report.failure == nil)
            #expect(try await client.pendingUserContext().isEmpty)

            // The first message makes the thread: its first note holds the attributes.
            _ = try await client.send("The export fails")
            let thread = try await server.thread(of: client)
            let note = try requireValue(
                server.emulator.messages(inThread: thread).first { $0.content.contains("- Attributes: ") }, "the note with the attributes")
            #expect(note.content.contains("`plan` pro") && note.content.contains("`seats` 3") && !note.content.contains("coupon"), "\(note.content)")

            // The agent's /user card: the attributes and the activity.
            let started = try server.emulator.runCommand("user", inChannel: thread)
            try await server.settled()
            let card = try requireValue(server.emulator.interaction(started.id)?.content, "/user answered")
            #expect(card.contains("**Attributes**") && card.contains("`plan` pro") && card.contains("`seats` 3"), "\(card)")
            #expect(card.contains("**Recent activity**\n- `export_failed`") && card.contains("`format` pdf"), "\(card)")

            // A key the server refuses is refused on the device first: nothing sent, nothing kept.
            await #expect(throws: ThreadDeskError.self) { try await client.setAttributes(["Plan": "team"]) }
            #expect(try await client.pendingUserContext().isEmpty)
        }
    }
}

/// The help center from the SDK's model through the server: the FAQ forum's posts listed, browsed
/// by tag, searched, read with their image, revalidated, and named to support by the next message.
@Suite("The help center from the SDK", .timeLimit(.minutes(3)))
struct SDKHelpCenterTests {
    static let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8) + [0, 0, 0, 2, 0, 0, 0, 3, 8, 2, 0, 0, 0])
        + Data(repeating: 7, count: 64)

    struct Posts: Sendable {
        var television: String
        var refund: String
        var export: String
    }

    @Test func theModelListsSearchesAndReadsTheFAQForum() async throws {
        try await withSDKServer(faq: true) { server in
            let posts = Posts(
                television: try server.emulator.postFAQ(
                    title: "I can't connect my TV", answer: "Open Settings › Devices › Add by hand.", tags: ["television"]),
                refund: try server.emulator.postFAQ(title: "Refund a purchase", answer: "Within 30 days, from Settings › Billing.", tags: ["billing"]),
                export: try server.emulator.postFAQ(
                    title: "Export to PDF", answer: "Use File › Export, then pick PDF.",
                    attachments: [.init(filename: "export.png", contentType: "image/png", data: Self.png)]))
            try await server.settled()
            try await Self.read(server, posts)
        }
    }

    @MainActor
    static func read(_ server: SDKHarness, _ posts: Posts) async throws {
        let client = server.client()
        var options = HelpCenter.Options()
        options.searchDelay = .zero
        let help = HelpCenter(client: client, store: InMemoryHelpCenterStore(), options: options, clock: ContinuousClock(), now: { Date() })

        // Every article by title, and the topics; then one topic.
        await help.browse()
        #expect(help.lastError == nil, "\(String(describing: help.lastError))")
        #expect(help.articles.map(\.id) == [posts.export, posts.television, posts.refund])
        #expect(help.tags == ["billing", "television"] && !help.hasMore)
        await help.browse(tag: "billing")
        #expect(help.articles.map(\.id) == [posts.refund])

        // Search as the user types, misspelled.
        await help.search("cant conect tv")
        #expect(help.results.first?.id == posts.television)

        // Read with its image, fetched with the token through ThreadDesk.
        let export = try await help.article(posts.export)
        #expect(export.title == "Export to PDF" && export.text == "Use File › Export, then pick PDF.")
        let image = try requireValue(export.attachments.first, "the article's image")
        #expect(image.url.hasPrefix("/v1/attachments/") && image.filename == "export.png")
        #expect(try await help.data(for: image) == Self.png)

        // A page asked for again with its ETag: 304. A read counted once a day.
        guard case .fresh(let page, let etag?) = try await client.articles() else {
            Issue.record("a page without an ETag")
            return
        }
        #expect(page.articles.count == 3)
        #expect(try await client.articles(etag: etag) == .notModified)
        #expect(try await client.countArticleView(posts.refund).counted)
        #expect(try await !client.countArticleView(posts.refund).counted)

        // Still need help: the next message names the article to support.
        let conversation = SupportConversation(client: client, store: nil, clock: ContinuousClock())
        conversation.stillNeedHelp(article: export)
        conversation.draft = "The PDF is empty"
        conversation.send()
        let sent = ContinuousClock.now.advanced(by: .seconds(90))
        while conversation.messages.last?.delivery != .sent && conversation.messages.last?.delivery != .queued {
            guard ContinuousClock.now < sent else { throw Missing(description: "the message was not taken within 90 s") }
            try await Task.sleep(for: .milliseconds(20))
        }
        let thread = try await server.thread(of: client)
        #expect(server.emulator.messages(inThread: thread).contains { $0.content.contains("<#\(posts.export)>") })
        await conversation.stop()
    }
}
