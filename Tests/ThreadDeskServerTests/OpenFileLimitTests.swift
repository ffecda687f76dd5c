import Testing
import ThreadDeskServer

@Suite("Open-file limit")
struct OpenFileLimitTests {
    @Test func streamsAreKeptWithinWhatTheLimitCarries() {
        // The machine this was measured on: a hard limit of 20,000 files.
        let limit = OpenFileLimit(soft: 20_000, hard: 20_000)
        #expect(limit.streamCapacity(configured: 100_000) == 20_000 - OpenFileLimit.reserve)
        #expect(limit.streamCapacity(configured: 5_000) == 5_000)
        // A limit smaller than the reserve still lets one stream in rather than none.
        #expect(OpenFileLimit(soft: 256, hard: 256).streamCapacity(configured: 20_000) == 1)
        #expect(OpenFileLimit(soft: Int.max, hard: Int.max).streamCapacity(configured: 100_000) == 100_000)
    }

    @Test func theSoftLimitIsRaisedToTheHardOne() throws {
        let raised = try #require(OpenFileLimit.raiseToHard())
        #expect(raised.soft == raised.hard)
        #expect(OpenFileLimit.current() == raised)
    }
}
