// Linux stand-in for Apple's DeviceCheck: only what ThreadDeskKit calls, declared as Apple's Swift
// interface has it (the `async throws` forms are how Swift imports the completion-handler methods).
// Availability as Apple's documentation lists it; the Linux compiler does not check it.
import Foundation

/// Apple's `DCErrorDomain`.
@available(iOS 11.0, macOS 10.15, tvOS 11.0, watchOS 9.0, visionOS 1.0, *)
public let DCErrorDomain: String = "com.apple.devicecheck.error"

/// Apple's Swift import of the `DCErrorDomain` error enum (NS_ERROR_ENUM): a struct wrapping the
/// NSError, with `Code` and a static shorthand per code.
@available(iOS 11.0, macOS 10.15, tvOS 11.0, watchOS 9.0, visionOS 1.0, *)
public struct DCError: CustomNSError, Hashable, Error {
    public let _nsError: NSError

    public init(_nsError: NSError) {
        precondition(_nsError.domain == DCErrorDomain)
        self._nsError = _nsError
    }

    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        self.init(_nsError: NSError(domain: DCErrorDomain, code: code.rawValue, userInfo: userInfo))
    }

    public var code: Code { Code(rawValue: _nsError.code) ?? .unknownSystemFailure }

    public static var errorDomain: String { DCErrorDomain }
    public var errorCode: Int { _nsError.code }
    public var errorUserInfo: [String: Any] { _nsError.userInfo }

    public static func == (lhs: DCError, rhs: DCError) -> Bool { lhs._nsError.isEqual(rhs._nsError) }
    public func hash(into hasher: inout Hasher) { hasher.combine(_nsError.hash) }

    @available(iOS 11.0, macOS 10.15, tvOS 11.0, watchOS 9.0, visionOS 1.0, *)
    public enum Code: Int, Sendable, Hashable {
        case unknownSystemFailure = 0
        case featureUnsupported = 1
        case invalidInput = 2
        case invalidKey = 3
        case serverUnavailable = 4
    }

    public static var unknownSystemFailure: Code { .unknownSystemFailure }
    public static var featureUnsupported: Code { .featureUnsupported }
    public static var invalidInput: Code { .invalidInput }
    public static var invalidKey: Code { .invalidKey }
    public static var serverUnavailable: Code { .serverUnavailable }
}

/// App Attest. Not Sendable: Apple's documentation shows no Sendable conformance for the class
/// (only `@Sendable` completion handlers); if the SDK has one, this is merely the stricter check.
///
/// The shim's behaviour, deterministic so tests can see what the Kit passes in: no Secure Enclave
/// here (`isSupported` false, as on a Mac or a simulator); `generateKey()` answers
/// ``shimKeyID``; `attestKey` and `generateAssertion` answer the bytes of
/// `"attestation:<keyId>:"` or `"assertion:<keyId>:"` followed by `clientDataHash`, and throw
/// `DCError(.invalidKey)` for the key id ``shimLostKeyID`` (a key lost by a restore onto
/// another device).
@available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, visionOS 1.0, *)
open class DCAppAttestService: NSObject {
    nonisolated(unsafe) private static let sharedInstance = DCAppAttestService()

    /// Apple's class inherits NSObject's public `init()`; the shim hides it, as the Kit is to use `shared`.
    override private init() {}

    open class var shared: DCAppAttestService { sharedInstance }

    open var isSupported: Bool { false }

    open func generateKey() async throws -> String { Self.shimKeyID }

    open func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try Self.answer("attestation", keyId, clientDataHash)
    }

    open func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try Self.answer("assertion", keyId, clientDataHash)
    }

    private static func answer(_ kind: String, _ keyId: String, _ clientDataHash: Data) throws -> Data {
        if keyId == shimLostKeyID { throw DCError(.invalidKey) }
        return Data("\(kind):\(keyId):".utf8) + clientDataHash
    }
}

// Not in Apple's DeviceCheck: the shim's fixed answers, for tests only (`@_spi` keeps them out of
// the Kit's sight unless it imports the SPI, which it never does).
@available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, visionOS 1.0, *)
extension DCAppAttestService {
    @_spi(Shim) public static let shimKeyID = "c2hpbS1rZXk="
    @_spi(Shim) public static let shimLostKeyID = "bG9zdC1rZXk="
}
