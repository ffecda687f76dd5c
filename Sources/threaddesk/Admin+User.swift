import ArgumentParser
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore
import ThreadDeskWire

/// `threaddesk admin user show|export|delete ID` and `admin user list --inactive 365d`: a user's
/// data on request (by email, say), from a shell beside the servers.
extension Admin {
    struct User: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show, export or erase one user's data; list inactive users.", subcommands: [Show.self, Export.self, Delete.self, List.self])
    }

    struct UserOptions: ParsableArguments {
        @Option(help: "The .env file to read; variables already in the environment win.") var envFile = ".env"
        @Option(help: "The store (default: STORE_URL from the environment or .env).") var store: String?
        @Option(help: "The app the user belongs to (an id of APPS_FILE); the single app's by default.") var app = AppID.default.rawValue

        var environment: [String: String] { DotEnv.environment(path: envFile) }
        var storeURL: String { store ?? environment["STORE_URL"] ?? ServerConfiguration.defaultStoreURL }

        func userID(_ raw: String) throws -> UserID {
            guard let id = UserID(raw) else { throw ValidationError("not a user id: 1–128 characters of letters, digits and - _ . : @") }
            return UserID(app: try appID(), local: id)
        }

        func appID() throws -> AppID {
            guard let app = AppID(app) else { throw ValidationError("not an app id: 1–32 of a-z, 0-9 and -") }
            return app
        }

        /// Runs `body` with the administration of the store, and Discord's configuration when `discord`.
        func run<T: Sendable>(discord: Bool = false, _ body: (UserAdministration) async throws -> T) async throws -> T {
            var logger = Logger(label: "threaddesk.admin")
            logger.logLevel = .warning
            var configuration: ServerConfiguration?
            if discord {
                do {
                    configuration = try ServerConfiguration(environment: environment)
                } catch {
                    FileHandle.standardError.write(Data("\(error)\n".utf8))
                    throw ExitCode(78)
                }
            }
            return try await withStore(url: storeURL, logger: logger) { store in
                try await body(UserAdministration(store: store, configuration: configuration, logger: logger))
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "What ThreadDesk keeps about a user (JSON; secrets only by whether they exist).")
        @OptionGroup var options: UserOptions
        @Argument(help: "The user's id.") var id: String

        func run() async throws {
            let id = try options.userID(id)
            guard let kept = try await options.run({ try await $0.show(id) }) else { throw Admin.nothingKept(id) }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(kept), as: UTF8.self))
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A user's data as GET /v1/me/export gives it, every message in one JSON document (the right of access).")
        @OptionGroup var options: UserOptions
        @Option(name: .shortAndLong, help: "Write to this new file instead of standard output.") var output: String?
        @Argument(help: "The user's id.") var id: String

        func run() async throws {
            let id = try options.userID(id)
            let handle: FileHandle
            if let output {
                guard !FileManager.default.fileExists(atPath: output) else { throw ValidationError("\(output) exists already; an export never overwrites a file") }
                guard FileManager.default.createFile(atPath: output, contents: nil, attributes: [.posixPermissions: 0o600]),
                    let file = FileHandle(forWritingAtPath: output)
                else { throw ValidationError("cannot write \(output)") }
                handle = file
            } else {
                handle = .standardOutput
            }
            defer { if output != nil { try? handle.close() } }
            let found = try await options.run { admin in try await admin.export(id) { handle.write($0) } }
            if !found {
                if let output { try? FileManager.default.removeItem(atPath: output) }
                throw Admin.nothingKept(id)
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Erase a user as DELETE /v1/me does: their thread settled as USER_DELETION says, then everything ThreadDesk keeps.",
            discussion: "Reads the same configuration as serve (Discord's token and forum). Erasing a user already gone is no error.")
        @OptionGroup var options: UserOptions
        @Argument(help: "The user's id.") var id: String

        func run() async throws {
            let id = try options.userID(id)
            let erased = try await options.run(discord: true) { try await $0.delete(id) }
            print(erased ? "Erased \(id.local.rawValue)" : "Nothing kept about \(id.local.rawValue)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Users inactive for at least a while, one per line: id, then last activity.")
        @OptionGroup var options: UserOptions
        @Option(help: "How long without activity: days (365d), weeks (52w) or hours (12h).", transform: Admin.age) var inactive: Duration
        @Option(help: "At most this many users.") var limit = 1000

        func run() async throws {
            guard limit > 0 else { throw ValidationError("--limit must be 1 or more") }
            let app = try options.appID()
            // Those of --app among every app's inactive users (retention is the deployment's): a
            // first read of as many as asked, enough when they are all the app's (one app), and a
            // wider one only when other apps' users are among them.
            var users = try await options.run { try await $0.inactive(for: inactive, limit: limit + 1) }
            if users.contains(where: { $0.id.app != app }) {
                users = try await options.run { try await $0.inactive(for: inactive, limit: 1_000_000) }.filter { $0.id.app == app }
            }
            for user in users.prefix(limit) { print("\(user.id.local.rawValue)\t\(user.lastActivity.formatted(.iso8601))") }
            if users.count > limit { FileHandle.standardError.write(Data("More users are inactive; raise --limit to list them.\n".utf8)) }
        }
    }

    static func nothingKept(_ id: UserID) -> ExitCode {
        FileHandle.standardError.write(Data("ThreadDesk keeps nothing about \(id.local.rawValue)\n".utf8))
        return ExitCode(1)
    }

    /// `365d`, `52w`, `12h`.
    static func age(_ text: String) throws -> Duration {
        let units: [Character: Int] = ["h": 3600, "d": 86_400, "w": 7 * 86_400]
        guard let unit = text.last.flatMap({ units[$0] }), let count = Int(text.dropLast()), count > 0, count <= 100 * 366 * 24 else {
            throw ValidationError("--inactive takes a number and a unit: 365d, 52w or 12h")
        }
        return .seconds(count * unit)
    }
}
