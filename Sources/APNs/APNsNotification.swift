import Foundation

/// One notification: what the device shows and how APNs should treat it.
public struct APNsNotification: Sendable, Hashable {
    public enum PushType: String, Sendable, Hashable {
        case alert
        case background
    }

    public var pushType: PushType
    public var title: String?
    public var body: String?
    public var badge: Int?
    public var sound: String?
    public var threadID: String?
    public var category: String?
    /// Extra top-level keys for the app (strings only).
    public var custom: [String: String]
    /// 10 delivers now; 5 lets the device save power. Background pushes must use 5.
    public var priority: Int
    public var expiration: Date?
    public var collapseID: String?
    public var id: UUID?
    /// The topic (the app's bundle id) when it is not the client's: one key signs for every app
    /// of its team.
    public var topic: String?

    public init(
        pushType: PushType = .alert, title: String? = nil, body: String? = nil, badge: Int? = nil, sound: String? = nil,
        threadID: String? = nil, category: String? = nil, custom: [String: String] = [:], priority: Int? = nil,
        expiration: Date? = nil, collapseID: String? = nil, id: UUID? = nil
    ) {
        self.pushType = pushType
        self.title = title
        self.body = body
        self.badge = badge
        self.sound = sound
        self.threadID = threadID
        self.category = category
        self.custom = custom
        self.priority = priority ?? (pushType == .background ? 5 : 10)
        self.expiration = expiration
        self.collapseID = collapseID
        self.id = id
    }

    /// Apple's limit for a notification's JSON payload.
    public static let maxPayloadSize = 4096

    /// The JSON payload, shortening `body` (never title or keys) until it fits in 4 KB.
    public func payload() -> Data {
        let full = encode(body: body)
        guard full.count > Self.maxPayloadSize, let body else { return full }
        var low = 0
        var high = body.count
        var best = encode(body: "…")
        while low <= high {
            let middle = (low + high) / 2
            let candidate = encode(body: String(body.prefix(middle)) + "…")
            if candidate.count <= Self.maxPayloadSize {
                best = candidate
                low = middle + 1
            } else {
                high = middle - 1
            }
        }
        return best
    }

    /// Written by hand: keys sorted, nothing but strings and integers. (`JSONSerialization` of
    /// `[String: Any]` took 38 % of a push's CPU in bench/apns.py, in casts and key collation.)
    private func encode(body: String?) -> Data {
        var aps: [(String, JSONScalar)] = []
        switch pushType {
        case .alert:
            var alert: [(String, JSONScalar)] = []
            if let body { alert.append(("body", .string(body))) }
            if let title { alert.append(("title", .string(title))) }
            aps.append(("alert", .object(alert)))
            if let category { aps.append(("category", .string(category))) }
            if let sound { aps.append(("sound", .string(sound))) }
        case .background:
            aps.append(("content-available", .integer(1)))
        }
        if let badge { aps.append(("badge", .integer(badge))) }
        if let threadID { aps.append(("thread-id", .string(threadID))) }
        var root = custom.filter { $0.key != "aps" }.map { ($0.key, JSONScalar.string($0.value)) }
        root.append(("aps", .object(aps)))
        var out: [UInt8] = []
        out.reserveCapacity(256 + (body?.utf8.count ?? 0))
        JSONScalar.object(root).write(to: &out)
        return Data(out)
    }
}

/// The few JSON shapes a notification has.
private indirect enum JSONScalar {
    case string(String)
    case integer(Int)
    case object([(String, JSONScalar)])

    func write(to out: inout [UInt8]) {
        switch self {
        case .string(let text): Self.write(text, to: &out)
        case .integer(let value): out.append(contentsOf: String(value).utf8)
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.sorted(by: { $0.0 < $1.0 }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.write(member.0, to: &out)
                out.append(UInt8(ascii: ":"))
                member.1.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A JSON string: UTF-8 as it is, with quote, backslash and control characters escaped.
    static func write(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
