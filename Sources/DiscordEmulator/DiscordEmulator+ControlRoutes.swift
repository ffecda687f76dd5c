import NIOFoundationCompat
import Foundation
import Hummingbird
import NIOCore

/// The control API over HTTP under `/_emulator`, for the sandbox console and non-Swift tools.
extension DiscordEmulator {
    struct ReplyRequest: Decodable {
        struct File: Decodable {
            var filename: String
            var contentType: String?
            /// Either base64 bytes or plain text.
            var base64: String?
            var text: String?
        }
        var content: String?
        var replyTo: String?
        var attachments: [File]?
    }

    struct Switch: Decodable {
        var required: Bool?
        var enabled: Bool?
        var resumable: Bool?
        var locked: Bool?
    }

    struct FaultRequest: Decodable {
        var count: Int?
        var status: Int?
        var milliseconds: Int?
        var code: UInt16?
        var reason: String?
    }

    struct EditRequest: Decodable {
        var content: String
        /// As this member (who must be the author); as nobody in particular when absent.
        var member: String?
    }

    struct DenyRequest: Decodable { var permissions: String }

    struct ClockRequest: Decodable { var advanceSeconds: Double }

    func addControlRoutes(to router: Router<BasicRequestContext>) {
        let control = router.group("/_emulator")
        control.get("/info") { _, _ in try Self.encode(await self.endpoints()) }
        control.get("/counters") { _, _ in try Self.encode(self.counters) }
        control.get("/requests") { _, _ in try Self.encode(self.recordedRequests) }
        control.get("/threads") { _, _ in try Self.encode(self.threads()) }
        // Moves the CDN's clock forward, so signed attachment URLs expire without waiting a day.
        control.post("/clock") { request, context in
            try await Self.answer {
                let body = try await request.decode(as: ClockRequest.self, context: context)
                self.advanceClock(by: body.advanceSeconds)
                return ["advancedSeconds": body.advanceSeconds]
            }
        }
        control.get("/threads/:id/messages") { _, context in
            try Self.encode(self.messages(inThread: context.parameters.get("id") ?? ""))
        }
        control.post("/threads/:id/replies") { request, context in
            try await Self.answer {
                let body = try await request.decode(as: ReplyRequest.self, context: context)
                let files = (body.attachments ?? []).map {
                    UploadedFile(
                        filename: $0.filename, contentType: $0.contentType,
                        data: $0.base64.flatMap { Data(base64Encoded: $0) } ?? Data(($0.text ?? "").utf8))
                }
                return try self.replyAsAgent(
                    inThread: context.parameters.get("id") ?? "", content: body.content ?? "", attachments: files,
                    replyingTo: body.replyTo)
            }
        }
        control.post("/threads/:id/typing") { _, context in
            try await Self.answer {
                try self.typeAsAgent(inThread: context.parameters.get("id") ?? "")
                return ["typing": true]
            }
        }
        control.post("/threads/:id/notes") { request, context in
            try await Self.answer {
                let body = try await request.decode(as: ReplyRequest.self, context: context)
                return try self.postNote(inThread: context.parameters.get("id") ?? "", content: body.content ?? "")
            }
        }
        control.post("/threads/:id/archive") { request, context in
            try await Self.answer {
                let body = try? await request.decode(as: Switch.self, context: context)
                try self.archiveThread(context.parameters.get("id") ?? "", locked: body?.locked ?? false)
                return self.threads()
            }
        }
        control.post("/threads/:id/lock") { _, context in
            try await Self.answer {
                try self.lockThread(context.parameters.get("id") ?? "")
                return self.threads()
            }
        }
        control.delete("/threads/:id") { _, context in
            try await Self.answer {
                try self.deleteThread(context.parameters.get("id") ?? "")
                return self.threads()
            }
        }
        control.patch("/channels/:channel/messages/:message") { request, context in
            try await Self.answer {
                let body = try await request.decode(as: EditRequest.self, context: context)
                let channel = context.parameters.get("channel") ?? ""
                try self.editMessage(context.parameters.get("message") ?? "", inChannel: channel, content: body.content, as: body.member)
                return self.messages(inThread: channel)
            }
        }
        control.delete("/channels/:channel/messages/:message") { _, context in
            try await Self.answer {
                let channel = context.parameters.get("channel") ?? ""
                try self.deleteMessage(context.parameters.get("message") ?? "", inChannel: channel)
                return self.messages(inThread: channel)
            }
        }
        control.put("/forum/require-tag") { request, context in
            let body = try await request.decode(as: Switch.self, context: context)
            self.setForumRequiresTag(body.required ?? true)
            return try Self.encode(["required": body.required ?? true])
        }
        // Takes permissions (a bitfield as a decimal string) from the bot in the forum.
        control.post("/forum/deny-bot") { request, context in
            let body = try await request.decode(as: DenyRequest.self, context: context)
            guard let bits = UInt64(body.permissions) else { return Response(status: .badRequest) }
            self.denyBotInForum(bits)
            return Response(status: .noContent)
        }
        control.put("/application/message-content") { request, context in
            let body = try await request.decode(as: Switch.self, context: context)
            self.setMessageContentIntent(enabled: body.enabled ?? true)
            return try Self.encode(["enabled": body.enabled ?? true])
        }
        control.post("/faults/server-errors") { request, context in
            let body = try await request.decode(as: FaultRequest.self, context: context)
            self.injectServerErrors(count: body.count ?? 1, status: body.status ?? 500)
            return Response(status: .noContent)
        }
        control.post("/faults/latency") { request, context in
            let body = try await request.decode(as: FaultRequest.self, context: context)
            self.setLatency(.milliseconds(body.milliseconds ?? 0))
            return Response(status: .noContent)
        }
        control.post("/gateway/drop") { _, _ in
            self.dropGatewayConnections()
            return Response(status: .noContent)
        }
        control.post("/gateway/reconnect") { _, _ in
            self.sendGatewayReconnect()
            return Response(status: .noContent)
        }
        control.post("/gateway/invalid-session") { request, context in
            let body = try await request.decode(as: Switch.self, context: context)
            self.sendInvalidSession(resumable: body.resumable ?? false)
            return Response(status: .noContent)
        }
        control.post("/gateway/heartbeat-acks") { request, context in
            let body = try await request.decode(as: Switch.self, context: context)
            self.setHeartbeatAcks(body.enabled ?? true)
            return Response(status: .noContent)
        }
        control.post("/gateway/close") { request, context in
            let body = try await request.decode(as: FaultRequest.self, context: context)
            self.closeGatewayConnections(code: body.code ?? 4000, reason: body.reason ?? "")
            return Response(status: .noContent)
        }
    }

    /// Runs a control action, turning Discord-style failures into their JSON answers.
    static func answer<T: Encodable>(_ action: () async throws -> T) async throws -> Response {
        do {
            return try encode(try await action())
        } catch let failure as DiscordFailure {
            return response(failure, headers: [:])
        }
    }

    static func encode<T: Encodable>(_ value: T) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(data: try encoder.encode(value))))
    }
}
