import Foundation
import ThreadDeskCore

/// The limits' variables: the quotas, and which addresses count as one caller.
extension ServerConfiguration {
    /// The quotas (`QuotaSettings.variables`), `TRUSTED_PROXIES`, `QUOTA_IPV6_PREFIX`.
    mutating func readLimits(_ value: (String) -> String?, problem: inout Problem) {
        for (name, keyPath) in QuotaSettings.variables {
            guard let text = value(name) else { continue }
            if let limit = QuotaSettings.parse(text) { quotas[keyPath: keyPath] = limit } else { problem.invalid.append("\(name) (count/seconds, or 0)") }
        }
        if let proxies = value("TRUSTED_PROXIES") {
            trustedProxies = Set(proxies.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
            let unreadable = trustedProxies.filter { IPNetwork($0) == nil }.sorted()
            if !unreadable.isEmpty {
                problem.invalid.append("TRUSTED_PROXIES (addresses or networks such as 10.0.0.0/8 or fd00::/8; not: \(unreadable.joined(separator: ", ")))")
            }
        }
        if let prefix = value("QUOTA_IPV6_PREFIX") {
            if let bits = Int(prefix), (16...128).contains(bits) { quotaIPv6PrefixBits = bits } else { problem.invalid.append("QUOTA_IPV6_PREFIX (16 to 128)") }
        }
    }
}
