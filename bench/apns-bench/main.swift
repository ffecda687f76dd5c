import APNs
import Foundation
import Logging

/// `apns-bench`: pushes as fast as one `APNsClient` (one HTTP/2 connection) can, to an APNs
/// emulator, and prints one JSON line: `{"sent", "failed", "seconds", "perSecond", "concurrency"}`.
/// bench/apns.py runs it beside aioapns against the same emulator.
///
///     apns-bench --emulator '<the JSON line apns-emulator prints>' --count 50000 --concurrency 100
@main
struct APNsBench {
    struct Emulator: Decodable {
        var url: String
        var keyID: String
        var teamID: String
        var topic: String
        var privateKeyPath: String
        var caCertificatePath: String
    }

    static func main() async throws {
        var arguments = CommandLine.arguments.dropFirst()
        var emulatorJSON = ""
        var count = 20_000
        var concurrency = 100
        while let name = arguments.popFirst() {
            guard let value = arguments.popFirst() else { fatalError("\(name) needs a value") }
            switch name {
            case "--emulator": emulatorJSON = value
            case "--count": count = Int(value) ?? count
            case "--concurrency": concurrency = Int(value) ?? concurrency
            default: fatalError("unknown option \(name)")
            }
        }
        let emulator = try JSONDecoder().decode(Emulator.self, from: Data(emulatorJSON.utf8))
        var logger = Logger(label: "apns-bench")
        logger.logLevel = .error
        var configuration = APNsClient<ContinuousClock>.Configuration(
            topic: emulator.topic, baseURL: emulator.url,
            additionalTrustRootPEM: try String(contentsOfFile: emulator.caCertificatePath, encoding: .utf8))
        configuration.budget = .seconds(30)
        let client = try APNsClient(
            configuration: configuration, keyID: emulator.keyID, teamID: emulator.teamID,
            privateKeyPEM: try String(contentsOfFile: emulator.privateKeyPath, encoding: .utf8), logger: logger)
        let notification = APNsNotification(title: "New reply", body: "Support answered your question.", badge: 1, custom: ["messageId": "1"])
        let device = String(repeating: "ab", count: 32)

        if ProcessInfo.processInfo.environment["APNS_BENCH_TIMING"] != nil {
            // Where one push's time goes, sequentially (for investigating, not a result).
            for _ in 0..<3 { try await client.send(notification, to: device, environment: .development) }
            var total = Duration.zero
            for _ in 0..<500 {
                let t0 = ContinuousClock.now
                try await client.send(notification, to: device, environment: .development)
                total += t0.duration(to: .now)
            }
            print("sequential mean \(total / 500)")
        }
        // One push first: the connection and the provider token exist before the clock starts.
        try await client.send(notification, to: device, environment: .development)
        let start = ContinuousClock.now
        let failed = await withTaskGroup(of: Int.self) { group in
            let perWorker = count / concurrency
            for worker in 0..<concurrency {
                let share = perWorker + (worker < count % concurrency ? 1 : 0)
                group.addTask {
                    var failed = 0
                    for _ in 0..<share {
                        do { try await client.send(notification, to: device, environment: .development) } catch { failed += 1 }
                    }
                    return failed
                }
            }
            var failed = 0
            for await count in group { failed += count }
            return failed
        }
        let elapsed = start.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        await client.shutdown()
        let result: [String: Any] = [
            "sent": count - failed, "failed": failed, "seconds": seconds, "perSecond": Double(count - failed) / seconds,
            "concurrency": concurrency,
        ]
        print(String(decoding: try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys]), as: UTF8.self))
    }
}
