import Hummingbird
import NIOCore

/// The context of every ThreadDesk request: Hummingbird's core, plus the peer's address, which
/// the quotas per client address need.
public struct ThreadDeskRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
