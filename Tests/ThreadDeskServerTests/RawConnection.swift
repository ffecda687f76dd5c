import NIOCore
import NIOPosix
import Synchronization
import TestSupport

/// A connection to the server written by hand (a head a line at a time, a body a byte at a
/// time), keeping every byte the server sends back.
struct RawConnection: Sendable {
    let channel: any Channel
    private let received: Received

    static func open(port: Int) async throws -> RawConnection {
        let received = Received()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Collector(received: received)) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawConnection(channel: channel, received: received)
    }

    func send(_ text: String) async throws { try await send(ByteBuffer(string: text)) }

    func send(_ bytes: ByteBuffer) async throws { try await channel.writeAndFlush(bytes).get() }

    /// What the server has sent so far, as text.
    var answer: String { received.text }

    /// Sends `byte` every `interval` until the server closes the connection or `limit` passes;
    /// whether it closed. A write to a closed connection ends the trickle too.
    func trickle(every interval: Duration, until limit: Duration) async -> Bool {
        let started = ContinuousClock.now
        while started.duration(to: .now) < limit {
            if !channel.isActive { return true }
            do {
                try await send("x")
            } catch {
                return await channel.closes(within: .seconds(30))
            }
            // The next byte when `interval` has passed, unless the server closes meanwhile.
            if await channel.closes(within: interval) { return true }
        }
        return !channel.isActive
    }

    func close() { channel.close(promise: nil) }

    /// Waits until what the server sent so far satisfies `condition` (checked as bytes come).
    func waitForAnswer(_ what: String, timeout: Duration = .seconds(120), until condition: (String) -> Bool) async throws {
        try await received.bytes.wait(for: "\(what) (so far: \(answer.prefix(200)))", timeout: timeout) {
            condition(String(decoding: $0, as: UTF8.self))
        }
    }

    private final class Received: Sendable {
        let bytes = Watched<[UInt8]>([])
        func append(_ buffer: ByteBuffer) { bytes.update { $0.append(contentsOf: buffer.readableBytesView) } }
        var text: String { String(decoding: bytes.value, as: UTF8.self) }
    }

    private final class Collector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let received: Received
        init(received: Received) { self.received = received }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { received.append(unwrapInboundIn(data)) }
    }
}
