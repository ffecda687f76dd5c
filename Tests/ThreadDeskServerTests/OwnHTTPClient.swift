import AsyncHTTPClient

/// Runs `body` with an HTTP client of its own and shuts the client down afterwards, whether
/// `body` returned or threw: a client dropped without `shutdown()` stops the whole test process
/// in a debug build, which would turn one failing test into a crash of all of them.
func withOwnHTTPClient<T>(
    _ configuration: HTTPClient.Configuration, isolation: isolated (any Actor)? = #isolation, _ body: (HTTPClient) async throws -> T
) async throws -> T {
    let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    let result: Result<T, any Error>
    do {
        result = .success(try await body(http))
    } catch {
        result = .failure(error)
    }
    try await http.shutdown()
    return try result.get()
}
