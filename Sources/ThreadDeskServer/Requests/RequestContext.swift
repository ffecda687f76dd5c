import Hummingbird
import NIOCore

/// The context of every ThreadDesk request: Hummingbird's core, plus the peer's address, which
/// the quotas per client address need.
public struct ThreadDeskRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The connection, so a live stream whose client stopped reading can be closed.
    let channel: any Channel
    /// Who the request proved to be (set by the route group's authentication middleware).
    var caller: Caller?
    /// The attested device whose App Attest assertion over this request verified (set by
    /// `AssertionMiddleware`); nil when none came or none was asked for.
    var assertedDevice: String?
    /// The request's body took a slot of the large-upload gate before the handler ran (see
    /// `AssertionMiddleware`); the handler's reading takes none of its own.
    var holdsLargeUploadSlot = false

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }
}
