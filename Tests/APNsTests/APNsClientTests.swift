import APNs
import APNsEmulator
import Crypto
import Foundation
import Logging
import Synchronization
import Testing
import TestSupport

private let quiet: Logger = {
    var logger = Logger(label: "apns-test")
    logger.logLevel = .critical
    return logger
}()

private let device = String(repeating: "a1", count: 32)

/// A client for the emulator on `clock`, its token signed at `wallClock`'s time. The budget is
/// generous: on real time a slow machine does not exhaust it; the tests of retries and budgets
/// run on a manual clock instead, which only they move (`ManualClock.drive`).
private func withAPNs<C: Clock>(
    clock: C,
    wallClock: @escaping @Sendable () -> Date = Date.init,
    _ body: @Sendable (APNsEmulator, APNsClient<C>) async throws -> Void
) async throws where C.Duration == Duration {
    try await APNsEmulator.withRunning(logger: quiet) { emulator in
        let credentials = await emulator.credentials()
        let tokens = try APNsTokenManager(
            keyID: credentials.keyID, teamID: credentials.teamID, privateKeyPEM: credentials.privateKeyPEM, clock: clock,
            wallClock: wallClock)
        var configuration = APNsClient<C>.Configuration(
            topic: credentials.topic, baseURL: credentials.url, additionalTrustRootPEM: credentials.caCertificatePEM)
        configuration.budget = .seconds(30)
        configuration.attemptTimeout = .seconds(20)
        configuration.backoffBase = .milliseconds(10)
        let client = try APNsClient(configuration: configuration, tokens: tokens, clock: clock, logger: quiet)
        try await body(emulator, client)
    }
}

private func withAPNs(
    wallClock: @escaping @Sendable () -> Date = Date.init,
    _ body: @Sendable (APNsEmulator, APNsClient<ContinuousClock>) async throws -> Void
) async throws {
    try await withAPNs(clock: ContinuousClock(), wallClock: wallClock, body)
}

@Suite("APNs client against the APNs emulator (HTTP/2, TLS, ES256)")
struct APNsClientTests {
    @Test func deliversAnAlertWithAppleHeadersOverOneConnection() async throws {
        try await withAPNs { emulator, client in
            let id = UUID()
            let notification = APNsNotification(
                title: "New reply", body: "We fixed it", badge: 2, sound: "default", threadID: "user-1", category: "SUPPORT_REPLY",
                collapseID: "user-1", id: id)
            let delivery = try await client.send(notification, to: device, environment: .development)
            #expect(delivery.apnsID == id.uuidString.lowercased())
            for index in 0..<19 {
                try await client.send(APNsNotification(title: "n\(index)", body: "b"), to: device, environment: .production)
            }
            let received = emulator.deliveries(to: device)
            #expect(received.count == 20)
            let first = try #require(received.first)
            #expect(first.pushType == "alert" && first.priority == 10 && first.collapseID == "user-1")
            let aps = first.aps
            #expect((aps["alert"] as? [String: Any])?["title"] as? String == "New reply")
            #expect((aps["alert"] as? [String: Any])?["body"] as? String == "We fixed it")
            #expect(aps["badge"] as? Int == 2)
            #expect(aps["thread-id"] as? String == "user-1")
            #expect(aps["category"] as? String == "SUPPORT_REPLY")
            #expect(emulator.counters.connections == 1)
        }
    }

    @Test func backgroundPushesUsePriorityFive() async throws {
        try await withAPNs { emulator, client in
            try await client.send(APNsNotification(pushType: .background, badge: 1), to: device, environment: .production)
            let delivery = try #require(emulator.deliveries.first)
            #expect(delivery.pushType == "background" && delivery.priority == 5)
            #expect(delivery.aps["content-available"] as? Int == 1)
            await #expect {
                try await client.send(APNsNotification(pushType: .background, priority: 10), to: device, environment: .production)
            } throws: { ($0 as? APNsError)?.reason == .badPriority }
        }
    }

    @Test func aLongBodyIsCutToFitFourKilobytes() async throws {
        try await withAPNs { emulator, client in
            let body = String(repeating: "Grüße 👋 ", count: 1000)
            try await client.send(APNsNotification(title: "New reply", body: body), to: device, environment: .production)
            let payload = try #require(emulator.deliveries.first?.payload)
            #expect(payload.count <= 4096 && payload.count > 3900)
            let text = try #require((emulator.deliveries.first?.aps["alert"] as? [String: Any])?["body"] as? String)
            #expect(text.hasSuffix("…") && body.hasPrefix(String(text.dropLast())))
        }
    }

    @Test func applesRefusalsAreTyped() async throws {
        try await withAPNs { emulator, client in
            emulator.script(device, [.unregistered(timestamp: 1_700_000_000_000)])
            await #expect {
                try await client.send(APNsNotification(body: "x"), to: device, environment: .production)
            } throws: { error in
                guard case .rejected(410, .unregistered, 1_700_000_000_000) = error as? APNsError else { return false }
                return true
            }
            emulator.script(device, [.reject(status: 400, reason: "BadDeviceToken")])
            await #expect {
                try await client.send(APNsNotification(body: "x"), to: device, environment: .production)
            } throws: { ($0 as? APNsError)?.reason?.invalidatesDeviceToken == true }
            emulator.script(device, [.reject(status: 400, reason: "SomethingNew")])
            await #expect {
                try await client.send(APNsNotification(body: "x"), to: device, environment: .production)
            } throws: { ($0 as? APNsError)?.reason == APNsReason(rawValue: "SomethingNew") }
            #expect(emulator.deliveries.isEmpty)
        }
    }

    @Test func busyAndFailingAnswersAreRetriedThenDeliveredOnce() async throws {
        let clock = ManualClock()
        try await withAPNs(clock: clock) { emulator, client in
            emulator.script(device, [
                .reject(status: 429, reason: "TooManyRequests"), .reject(status: 500, reason: "InternalServerError"),
                .reject(status: 503, reason: "ServiceUnavailable"), .delay(milliseconds: 50),
            ])
            try await clock.drive { try await client.send(APNsNotification(body: "eventually"), to: device, environment: .production) }
            #expect(emulator.deliveries.count == 1)
            #expect(emulator.counters.requests == 4)
        }
    }

    @Test func givesUpWhenAPNsStaysDownPastTheBudget() async throws {
        let clock = ManualClock()
        try await withAPNs(clock: clock) { emulator, client in
            emulator.setPermanentOutcome(.reject(status: 503, reason: "Shutdown"), for: device)
            await #expect {
                try await clock.drive { try await client.send(APNsNotification(body: "x"), to: device, environment: .production) }
            } throws: { error in
                guard case .unavailable(let attempts, _) = error as? APNsError else { return false }
                return attempts > 1
            }
            // It gave up inside its budget rather than sleeping past it.
            #expect(clock.now.offset < .seconds(30))
        }
    }

    @Test func anExpiredProviderTokenIsRenewedOnce() async throws {
        // The first token claims to be two hours old; every later one is signed now.
        let signings = Mutex(0)
        let wallClock: @Sendable () -> Date = {
            signings.withLock { count in
                count += 1
                return count == 1 ? Date().addingTimeInterval(-2 * 3600) : Date()
            }
        }
        try await withAPNs(wallClock: wallClock) { emulator, client in
            try await client.send(APNsNotification(body: "x"), to: device, environment: .production)
            #expect(emulator.deliveries.count == 1)
            #expect(emulator.counters.rejected == ["ExpiredProviderToken": 1])
            #expect(signings.withLock { $0 } == 2)
        }
    }

    @Test func forgedOrForeignTokensAreRefused() async throws {
        try await APNsEmulator.withRunning(logger: quiet) { emulator in
            let credentials = await emulator.credentials()
            let foreign = P256.Signing.PrivateKey().pemRepresentation
            for (keyID, teamID, pem, reason) in [
                (credentials.keyID, credentials.teamID, foreign, APNsReason.invalidProviderToken),
                ("OTHERKEY", credentials.teamID, credentials.privateKeyPEM, .invalidProviderToken),
                (credentials.keyID, "OTHERTEAM", credentials.privateKeyPEM, .invalidProviderToken),
            ] {
                let tokens = try APNsTokenManager(keyID: keyID, teamID: teamID, privateKeyPEM: pem, clock: ContinuousClock())
                let client = try APNsClient(
                    configuration: .init(topic: credentials.topic, baseURL: credentials.url, additionalTrustRootPEM: credentials.caCertificatePEM),
                    tokens: tokens, clock: ContinuousClock(), logger: quiet)
                await #expect {
                    try await client.send(APNsNotification(body: "x"), to: device, environment: .production)
                } throws: { ($0 as? APNsError)?.reason == reason }
            }
            #expect(emulator.deliveries.isEmpty)
        }
    }
}
