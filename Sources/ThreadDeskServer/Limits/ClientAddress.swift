import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as its bytes (4 or 16). An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`,
/// what a dual-stack listener reports for an IPv4 peer) is its IPv4 address.
struct IPAddress: Hashable, Sendable {
    let bytes: [UInt8]

    init?(_ text: some StringProtocol) {
        // Longer than any address (an IPv6 with a zone is not a client's).
        guard text.utf8.count <= 45 else { return nil }
        let text = String(text)
        // Plain byte buffers, not `in_addr`/`in6_addr`: which module a C struct's initializer
        // belongs to depends on the order the compiler imported its header in.
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = v4
            return
        }
        var all = [UInt8](repeating: 0, count: 16)
        guard inet_pton(AF_INET6, text, &all) == 1 else { return nil }
        bytes = all.prefix(12).elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]) ? Array(all.suffix(4)) : all
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    var isIPv4: Bool { bytes.count == 4 }

    /// The address with every bit past the first `bits` cleared.
    func masked(to bits: Int) -> IPAddress {
        var masked = bytes
        for index in masked.indices {
            let kept = min(8, max(0, bits - index * 8))
            masked[index] &= kept == 8 ? 0xff : ~(0xff >> UInt8(kept))
        }
        return IPAddress(bytes: masked)
    }

    var text: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = isIPv4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { raw in inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard written != nil else { return "invalid" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A network in CIDR notation (`10.0.0.0/8`, `fd00::/8`), or one address (`127.0.0.1`).
struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    let base: IPAddress
    let bits: Int

    init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else { return nil }
        let width = address.bytes.count * 8
        if parts.count == 2 {
            // A prefix on an IPv4-mapped address counts the mapped bits too.
            guard let given = Int(parts[1]), parts[1].allSatisfy(\.isASCII) else { return nil }
            let bits = parts[0].contains(":") && address.isIPv4 ? given - 96 : given
            guard (0...width).contains(bits) else { return nil }
            self.bits = bits
        } else {
            bits = width
        }
        base = address.masked(to: bits)
    }

    func contains(_ address: IPAddress) -> Bool {
        address.bytes.count == base.bytes.count && address.masked(to: bits) == base
    }

    var description: String { "\(base.text)/\(bits)" }
}

/// Who counts as one client for the per-address limits: an IPv4 address, or the IPv6 network of
/// `ipv6PrefixBits` (a home or a phone is handed a whole /64, so its addresses are one client).
struct ClientAddressRule: Sendable {
    var trustedProxies: [IPNetwork] = []
    var ipv6PrefixBits = 64

    func isTrusted(_ address: IPAddress) -> Bool { trustedProxies.contains { $0.contains(address) } }

    /// The client behind `peer`: the peer itself, or — when the peer is a trusted proxy — the
    /// nearest address in `X-Forwarded-For` that is not a trusted proxy.
    func client(peer: String?, forwardedFor: String?) -> String {
        guard let peerText = peer, let peer = IPAddress(peerText) else { return peer.map { "peer:\($0.prefix(64))" } ?? "unknown" }
        guard isTrusted(peer), let forwardedFor else { return key(peer) }
        let hops = forwardedFor.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            // What a trusted proxy appended is an address; anything else is not believed further.
            guard let address = IPAddress(hop) else { return key(peer) }
            if !isTrusted(address) { return key(address) }
        }
        return key(peer)
    }

    /// The quota key of one address.
    func key(_ address: IPAddress) -> String {
        address.isIPv4 ? address.text : IPNetwork("\(address.masked(to: ipv6PrefixBits).text)/\(ipv6PrefixBits)")?.description ?? address.text
    }
}
