import Foundation
import Testing
import ThreadDeskCore

/// How much of a query the first suggestion covers: the measure that decides whether an answer
/// may go out while support is away, so it must mean the same in a forum of any size.
@Suite("Best FAQ match")
struct BestMatchTests {
    static let forum = [
        CuratedAnswer(id: "a1", title: "Reset my password", text: "Tap Forgot password on the sign-in screen."),
        CuratedAnswer(id: "a2", title: "Change the email address", text: "Open Settings, then Account. Your password is asked again."),
        CuratedAnswer(id: "a3", title: "Save as a spreadsheet", text: "Use File, Save As and pick CSV.", keywords: ["excel"]),
    ]

    /// `count` answers that share no word (nor one a typo away) with the queries below.
    static func unrelated(_ count: Int) -> [CuratedAnswer] {
        (0..<count).map { CuratedAnswer(id: "z\($0)", title: "Unrelated topic number \($0)", text: "Nothing here about that subject \($0).") }
    }

    @Test func aQueryThatIsAnAnswersTitleCoversAll() throws {
        for forum in [Self.forum, SuggestionsTests.answers] {
            let index = SuggestionIndex(forum)
            for answer in forum {
                let best = try #require(index.bestMatch(for: answer.title))
                #expect(best.answer.id == answer.id)
                #expect(abs(best.coverage - 1) < 1e-9, "\(answer.title): \(best.coverage)")
            }
        }
    }

    @Test func oneCommonWordIsAWeakMatch() throws {
        let forum = [
            CuratedAnswer(id: "b1", title: "Delete my account", text: "Settings, Account, Delete."),
            CuratedAnswer(id: "b2", title: "Two accounts on one phone", text: "Each account signs in on its own."),
            CuratedAnswer(id: "b3", title: "Account email", text: "The account's email is in Settings."),
        ]
        let best = try #require(SuggestionIndex(forum).bestMatch(for: "my account balance looks wrong today"))
        #expect(best.coverage > 0 && best.coverage < 0.6, "\(best.coverage)")
        // Against the small forum above, a word of the query no answer has outweighs a word all three have.
        let rare = try #require(SuggestionIndex(forum).bestMatch(for: "account balance"))
        #expect(rare.coverage < 0.5, "\(rare.coverage)")
    }

    /// Answers that share nothing with the query change neither the answer found nor its coverage
    /// (the ranking's own rarity, which grows with the forum, would: 0.64 here becomes 0.66).
    @Test func coverageDoesNotDependOnTheForumsSize() throws {
        let queries = ["reset password email", "reset password", "pasword", "email adress please", "save spreadsheet now", "forgot my passw"]
        let small = SuggestionIndex(Self.forum)
        let large = SuggestionIndex(Self.forum + Self.unrelated(497))
        #expect(large.count == 500)
        for query in queries {
            let few = try #require(small.bestMatch(for: query), "\(query)")
            let many = try #require(large.bestMatch(for: query), "\(query)")
            #expect(few.answer == many.answer, "\(query)")
            #expect(abs(few.coverage - many.coverage) < 1e-9, "\(query): \(few.coverage) vs \(many.coverage)")
        }
        // A word two answers have weighs less than one only the best answer has.
        let partial = try #require(small.bestMatch(for: "reset password email"))
        #expect(partial.answer.id == "a1" && partial.coverage > 0.55 && partial.coverage < 2.0 / 3, "\(partial.coverage)")
    }

    @Test func typosAndPrefixesCoverLessThanTheWord() throws {
        let index = SuggestionIndex(Self.forum)
        let exact = try #require(index.bestMatch(for: "password reset"))
        let typo = try #require(index.bestMatch(for: "pasword reset"))
        let typing = try #require(index.bestMatch(for: "reset passw"))
        #expect(exact.coverage == 1 && typo.answer.id == "a1" && typing.answer.id == "a1")
        #expect(typo.coverage < typing.coverage && typing.coverage < exact.coverage, "\(typo.coverage) \(typing.coverage)")
    }

    @Test func nothingForStopWordsOrNoMatch() {
        let index = SuggestionIndex(Self.forum + SuggestionsTests.answers)
        #expect(index.bestMatch(for: "how do I do this") == nil)
        #expect(index.bestMatch(for: "the my a") == nil)
        #expect(index.bestMatch(for: "") == nil)
        #expect(index.bestMatch(for: "xyzzy qwerty") == nil)
        #expect(SuggestionIndex([]).bestMatch(for: "password") == nil)
    }

    @Test func theAnswerIsTheFirstSuggestion() {
        let index = SuggestionIndex(Self.forum + SuggestionsTests.answers + Self.unrelated(40))
        let queries = [
            "cant conect tv", "I can't connect my TV", "pasword reset", "CAFE", "export to cs", "subscr", "refund please", "connect printer",
            "connect tv", "night shift", "password", "reset password email", "unrelated topic", "number 7", "topic 12 password",
            String(repeating: "connect ", count: 40), "café mode tonight", "how do I change the email on my account",
        ]
        for query in queries {
            let best = index.bestMatch(for: query)
            #expect(best?.answer == index.suggestions(for: query, limit: 1).first, "\(query)")
            if let coverage = best?.coverage { #expect(coverage > 0 && coverage <= 1, "\(query): \(coverage)") }
        }
    }
}
