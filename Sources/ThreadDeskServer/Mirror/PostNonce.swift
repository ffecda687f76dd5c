import DiscordREST

/// The nonce of an accepted message's post: the message's own id and the part's place
/// (`o<id>-<part>`, within Discord's 25 characters). Discord answers a repeated nonce with the
/// post it has (`enforce_nonce`); the gateway's event of the post carries it, so ingestion knows
/// the post as the accepted message even before the outbox noted Discord's id of it.
enum PostNonce {
    static func make(_ id: Snowflake, part: Int) -> String { "o\(id)-\(part)" }

    /// The accepted message and the part a nonce names, if it is an outbox post's.
    static func parse(_ nonce: String) -> (id: Snowflake, part: Int)? {
        guard nonce.hasPrefix("o"), let dash = nonce.lastIndex(of: "-"),
            let id = Snowflake(String(nonce[nonce.index(after: nonce.startIndex)..<dash])),
            let part = Int(nonce[nonce.index(after: dash)...]), part >= 0
        else { return nil }
        return (id, part)
    }
}
