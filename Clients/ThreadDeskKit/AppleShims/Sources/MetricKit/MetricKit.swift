// Linux stand-in for Apple's MetricKit: only what ThreadDeskKit calls (the shared manager, adding
// and removing a subscriber, the subscriber's two callbacks, a diagnostic payload's JSON), declared
// as Apple's Swift interface has it. The subscriber's callbacks are `optional` requirements of an
// Objective-C protocol there; here they are requirements with empty defaults, which a conforming
// class may leave out just the same. Availability as Apple's documentation lists it (no tvOS or
// watchOS); the Linux compiler does not check it.
//
// Not Sendable: Apple's documentation shows no Sendable conformance for these classes; left
// non-Sendable, the stricter of the two.
import Foundation

/// A daily metrics report. The Kit takes no metrics; here so the subscriber's callbacks read as Apple's.
@available(iOS 13.0, macOS 12.0, visionOS 1.0, *)
@available(tvOS, unavailable)
@available(watchOS, unavailable)
open class MXMetricPayload: NSObject {
    private let shimJSON: Data

    /// Only the system makes these in Apple's framework.
    @_spi(Shim) public init(json: Data) {
        shimJSON = json
    }

    open func jsonRepresentation() -> Data { shimJSON }
}

/// A diagnostic report: crashes, hangs, CPU exceptions, disk writes, launches.
@available(iOS 14.0, macOS 12.0, visionOS 1.0, *)
@available(tvOS, unavailable)
@available(watchOS, unavailable)
open class MXDiagnosticPayload: NSObject {
    private let shimJSON: Data

    /// Only the system makes these in Apple's framework.
    @_spi(Shim) public init(json: Data) {
        shimJSON = json
    }

    open func jsonRepresentation() -> Data { shimJSON }
}

@available(iOS 13.0, macOS 12.0, visionOS 1.0, *)
@available(tvOS, unavailable)
@available(watchOS, unavailable)
public protocol MXMetricManagerSubscriber: NSObjectProtocol {
    func didReceive(_ payloads: [MXMetricPayload])
    @available(iOS 14.0, macOS 12.0, visionOS 1.0, *)
    func didReceive(_ payloads: [MXDiagnosticPayload])
}

/// The `optional` of Apple's Objective-C protocol.
@available(iOS 13.0, macOS 12.0, visionOS 1.0, *)
@available(tvOS, unavailable)
@available(watchOS, unavailable)
extension MXMetricManagerSubscriber {
    public func didReceive(_ payloads: [MXMetricPayload]) {}
    @available(iOS 14.0, macOS 12.0, visionOS 1.0, *)
    public func didReceive(_ payloads: [MXDiagnosticPayload]) {}
}

/// The shim's behaviour: subscribers are kept, and `shimDeliver` hands them payloads on the
/// caller's thread (MetricKit calls them on a queue of its own), so tests can play the system.
@available(iOS 13.0, macOS 12.0, visionOS 1.0, *)
@available(tvOS, unavailable)
@available(watchOS, unavailable)
open class MXMetricManager: NSObject {
    nonisolated(unsafe) private static let sharedManager = MXMetricManager()
    private let lock = NSLock()
    private var subscribers: [any MXMetricManagerSubscriber] = []

    override private init() {}

    open class var shared: MXMetricManager { sharedManager }

    open func add(_ subscriber: any MXMetricManagerSubscriber) {
        lock.withLock {
            if !subscribers.contains(where: { $0 === subscriber }) { subscribers.append(subscriber) }
        }
    }

    open func remove(_ subscriber: any MXMetricManagerSubscriber) {
        lock.withLock { subscribers.removeAll { $0 === subscriber } }
    }

    @_spi(Shim) public var shimSubscriberCount: Int { lock.withLock { subscribers.count } }

    @available(iOS 14.0, macOS 12.0, visionOS 1.0, *)
    @_spi(Shim) public func shimDeliver(_ payloads: [MXDiagnosticPayload]) {
        for subscriber in lock.withLock({ subscribers }) { subscriber.didReceive(payloads) }
    }
}
