import DiscordREST
import Hummingbird
import ThreadDeskCore
import ThreadDeskStore
import ThreadDeskWire

/// `/v1/installation` and `/v1/push-token`: the user's device.
struct DeviceRoutes: Sendable {
    let devices: DeviceService

    func register(on groups: V1Groups) {
        groups.users(charging: { .installation($0) }).put("installation", use: updateInstallation)
        // A copied token alone must not send the user's pushes to another device: an attested device signs.
        groups.signed(groups.users(charging: { .update($0) })).put("push-token", use: setPushToken)
        groups.signed(groups.users).delete("push-token", use: deletePushToken)
    }

    @Sendable func updateInstallation(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        let info = try Self.installation(try await request.jsonValue(limit: Request.smallBodyLimit).value)
        return try jsonResponse(InstallationResult(changed: try await devices.updateInstallation(info, for: user)))
    }

    @Sendable func setPushToken(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        let user = try context.user().id
        let body = try await request.decode(PushTokenRequest.self, limit: Request.smallBodyLimit)
        guard Self.isDeviceToken(body.token) else {
            throw APIError.badRequest(.invalidPushToken, "token must be the APNs device token in hex (64 to 200 hex digits).")
        }
        guard let environment = PushEnvironment(rawValue: body.environment) else {
            throw APIError.badRequest(.invalidEnvironment, "environment must be \"production\" or \"development\".")
        }
        try await devices.setPushToken(body.token.lowercased(), environment: environment, for: user)
        return Response(status: .noContent)
    }

    @Sendable func deletePushToken(_ request: Request, context: ThreadDeskRequestContext) async throws -> Response {
        try await devices.setPushToken(nil, environment: nil, for: try context.user().id)
        return Response(status: .noContent)
    }

    static func installation(_ json: JSON) throws -> InstallationInfo {
        do {
            return try InstallationInfo(json: json)
        } catch .notAnObject {
            throw APIError.badRequest(.invalidInstallation, "installation must be a JSON object.")
        } catch .tooManyFields {
            throw APIError.badRequest(.invalidInstallation, "installation has more than \(InstallationInfo.maxFields) fields.")
        } catch .invalidKey {
            throw APIError.badRequest(
                .invalidInstallation, "installation keys must be 1–\(InstallationInfo.maxKeyLength) letters, digits, spaces or `_ - . /`.")
        } catch .invalidValue(let field) {
            throw APIError.badRequest(
                .invalidInstallation,
                "installation.\(field) must be a single-line string, number or boolean of at most \(InstallationInfo.maxValueLength) characters.")
        } catch .controlCharacter(let field, let scalar) {
            throw APIError.controlCharacter(scalar, in: "installation.\(field)")
        }
    }

    static func isDeviceToken(_ token: String) -> Bool {
        (64...200).contains(token.utf8.count) && token.allSatisfy { $0.isASCII && $0.isHexDigit }
    }
}

extension JSON {
    /// The installation info of a session request, as the checks of ``InstallationInfo`` read it.
    init(_ installation: [String: InstallationValue]) {
        self = .object(
            installation.mapValues {
                switch $0 {
                case .string(let value): .string(value)
                case .number(let value): .number(value)
                case .bool(let value): .bool(value)
                }
            })
    }
}
