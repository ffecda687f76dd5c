// Linux stand-in for Apple's UserNotifications: only what ThreadDeskKit calls, declared as Apple's
// Swift interface has it (the `async throws` forms are how Swift imports the completion-handler
// methods). Availability as Apple's documentation lists it; the Linux compiler does not check it.
//
// Sendable: Apple's documentation shows no Sendable conformance for these classes, and whether
// the current SDK marks them NS_SWIFT_SENDABLE could not be confirmed here; they are left
// non-Sendable, the stricter of the two (a missing conformance can only fail this check falsely,
// never let a real mistake pass).
import Foundation

@available(iOS 10.0, macOS 10.14, tvOS 10.0, watchOS 3.0, visionOS 1.0, *)
public struct UNAuthorizationOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let badge = UNAuthorizationOptions(rawValue: 1 << 0)
    public static let sound = UNAuthorizationOptions(rawValue: 1 << 1)
    public static let alert = UNAuthorizationOptions(rawValue: 1 << 2)
}

@available(iOS 10.0, macOS 10.14, tvOS 10.0, watchOS 3.0, visionOS 1.0, *)
public struct UNNotificationPresentationOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let badge = UNNotificationPresentationOptions(rawValue: 1 << 0)
    public static let sound = UNNotificationPresentationOptions(rawValue: 1 << 1)
    @available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
    public static let list = UNNotificationPresentationOptions(rawValue: 1 << 3)
    @available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
    public static let banner = UNNotificationPresentationOptions(rawValue: 1 << 4)
}

@available(iOS 10.0, macOS 10.14, tvOS 10.0, watchOS 3.0, visionOS 1.0, *)
open class UNNotificationContent: NSObject {
    private let shimUserInfo: [AnyHashable: Any]

    @_spi(Shim) public init(userInfo: [AnyHashable: Any]) {
        shimUserInfo = userInfo
    }

    /// Unavailable on tvOS in Apple's headers.
    @available(tvOS, unavailable)
    open var userInfo: [AnyHashable: Any] { shimUserInfo }
}

@available(iOS 10.0, macOS 10.14, tvOS 10.0, watchOS 3.0, visionOS 1.0, *)
open class UNNotificationRequest: NSObject {
    open var content: UNNotificationContent { shimContent }
    private let shimContent: UNNotificationContent

    /// Apple's public initializer also takes a trigger, a type the Kit does not use.
    @_spi(Shim) public init(content: UNNotificationContent) {
        shimContent = content
    }
}

@available(iOS 10.0, macOS 10.14, tvOS 10.0, watchOS 3.0, visionOS 1.0, *)
open class UNNotification: NSObject {
    open var request: UNNotificationRequest { shimRequest }
    private let shimRequest: UNNotificationRequest

    /// Only the system makes these in Apple's framework.
    @_spi(Shim) public init(request: UNNotificationRequest) {
        shimRequest = request
    }
}

@available(iOS 10.0, macOS 10.14, watchOS 3.0, visionOS 1.0, *)
@available(tvOS, unavailable)
open class UNNotificationResponse: NSObject {
    open var notification: UNNotification { shimNotification }
    private let shimNotification: UNNotification

    /// Only the system makes these in Apple's framework.
    @_spi(Shim) public init(notification: UNNotification) {
        shimNotification = notification
    }
}

/// The shim's behaviour: authorization is granted; the badge and the options last asked for are
/// kept, readable through the `Shim` SPI, so tests can see what the Kit passed.
@available(iOS 10.0, macOS 10.14, tvOS 10.0, watchOS 3.0, visionOS 1.0, *)
open class UNUserNotificationCenter: NSObject {
    nonisolated(unsafe) private static let shared = UNUserNotificationCenter()
    private let lock = NSLock()
    private var badgeCount: Int?
    private var requestedOptions: UNAuthorizationOptions?

    /// Apple's is `init() NS_UNAVAILABLE`: use `current()`.
    override private init() {}

    open class func current() -> UNUserNotificationCenter { shared }

    open func requestAuthorization(options: UNAuthorizationOptions = []) async throws -> Bool {
        lock.withLock { requestedOptions = options }
        return true
    }

    /// Apple's documentation lists no watchOS for this method.
    @available(iOS 16.0, macOS 13.0, tvOS 16.0, visionOS 1.0, *)
    @available(watchOS, unavailable)
    open func setBadgeCount(_ newBadgeCount: Int) async throws {
        lock.withLock { badgeCount = newBadgeCount }
    }

    @_spi(Shim) public var shimBadgeCount: Int? { lock.withLock { badgeCount } }
    @_spi(Shim) public var shimRequestedOptions: UNAuthorizationOptions? { lock.withLock { requestedOptions } }
}
