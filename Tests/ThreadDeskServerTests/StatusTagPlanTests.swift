import Testing

@testable import ThreadDeskServer

/// The status tags' plan as a value: which PATCHes a change of status takes, from what a thread
/// shows, with no store and no network.
@Suite("Status tag plan")
struct StatusTagPlanTests {
    static let ids: [ConversationStatus: String] = [.needsReply: "1", .waitingOnUser: "2", .resolved: "3"]
    typealias Edit = StatusTagPlan.Edit

    @Test func aStatusShownForSureNeedsNoCall() {
        let shown = StatusTags.ShownNote(status: .needsReply, epoch: 1, shows: (["1"], false))
        #expect(!StatusTagPlan.isNeeded(.init(status: .needsReply), note: shown))
        #expect(StatusTagPlan.isNeeded(.init(status: .waitingOnUser), note: shown))
        // Archiving is a change even when the status is shown already.
        #expect(StatusTagPlan.isNeeded(.init(status: .needsReply, archive: true), note: shown))
        var unsure = shown
        unsure.forgetShows()
        #expect(StatusTagPlan.isNeeded(.init(status: .needsReply), note: unsure))
        #expect(StatusTagPlan.isNeeded(.init(status: .needsReply), note: nil))
    }

    @Test func theAgentsTagsStayAndOursIsReplaced() throws {
        let plan = try #require(StatusTagPlan(.init(status: .waitingOnUser), showing: (["9", "1", "8"], false), lastGiven: .needsReply, ids: Self.ids))
        #expect(plan.edits == [Edit(archived: nil, appliedTags: ["9", "8", "2"])])
        #expect(plan.tags == ["9", "8", "2"] && !plan.archived && !plan.announcesReopening)
    }

    @Test func atMostFourOfTheAgentsTagsFitBesideOurs() throws {
        let plan = try #require(StatusTagPlan(.init(status: .resolved), showing: (["a", "b", "c", "d", "e"], false), lastGiven: nil, ids: Self.ids))
        #expect(plan.tags == ["a", "b", "c", "d", "3"])
    }

    @Test func anArchivedThreadIsTakenOutAndPutBack() throws {
        let plan = try #require(StatusTagPlan(.init(status: .resolved), showing: (["1"], true), lastGiven: .needsReply, ids: Self.ids))
        #expect(plan.edits == [Edit(archived: false, appliedTags: ["3"]), Edit(archived: true, appliedTags: nil)])
        #expect(plan.archived)
    }

    @Test func theUsersMessageBringsAnArchivedThreadBack() throws {
        let plan = try #require(StatusTagPlan(.init(status: .needsReply), showing: (["3"], true), lastGiven: .resolved, ids: Self.ids))
        #expect(plan.edits == [Edit(archived: false, appliedTags: ["1"])])
        #expect(!plan.archived && plan.announcesReopening)
    }

    @Test func closeAndReopenArchiveInTheSameCall() throws {
        let close = try #require(StatusTagPlan(.init(status: .resolved, archive: true), showing: (["2"], false), lastGiven: .waitingOnUser, ids: Self.ids))
        #expect(close.edits == [Edit(archived: true, appliedTags: ["3"])] && close.archived)
        let reopen = try #require(StatusTagPlan(.init(status: .needsReply, archive: false), showing: (["3"], true), lastGiven: .resolved, ids: Self.ids))
        #expect(reopen.edits == [Edit(archived: false, appliedTags: ["1"])] && !reopen.archived)
        // `/reopen` is the agent's doing: no note tells them what they did.
        #expect(!reopen.announcesReopening)
    }

    @Test func aForumWithoutTheTagHasNoPlan() {
        #expect(StatusTagPlan(.init(status: .resolved), showing: ([], false), lastGiven: nil, ids: [.needsReply: "1"]) == nil)
    }
}
