import ArgumentParser
import Foundation
import Logging
import ThreadDeskServer
import ThreadDeskStore

/// `threaddesk admin …`: operations on a deployment's data, from a shell beside the server.
struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Operations on a deployment's data (backups, migrations, a user's data, dSYMs).",
        subcommands: [Backup.self, Migrations.self, User.self, App.self, DSYMs.self, Webhooks.self])

    struct StoreOptions: ParsableArguments {
        @Option(help: "The .env file to read; variables already in the environment win.") var envFile = ".env"
        @Option(help: "The store (default: STORE_URL from the environment or .env).") var store: String?

        /// The SQLite file of the store, or nil (with a message) for another kind.
        func sqlitePath() throws -> String {
            let url = store ?? DotEnv.environment(path: envFile)["STORE_URL"] ?? ServerConfiguration.defaultStoreURL
            guard url.hasPrefix("sqlite://") else {
                FileHandle.standardError.write(
                    Data("Only a SQLite store is handled here. For PostgreSQL use its own tools (pg_dump --format=custom; see the README).\n".utf8))
                throw ExitCode(2)
            }
            return String(url.dropFirst("sqlite://".count))
        }
    }

    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a live SQLite store, consistently, into a new file (the server may keep running).")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The new file.") var path: String

        func run() async throws {
            let store = try SQLiteStore(path: try options.sqlitePath(), logger: Logger(label: "threaddesk.admin"))
            try store.backup(to: path)
            print("Backed up to \(path)")
        }
    }

    struct Migrations: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the store's schema migrations and which are applied.")
        @OptionGroup var options: StoreOptions

        func run() async throws {
            let store = try SQLiteStore(path: try options.sqlitePath(), logger: Logger(label: "threaddesk.admin"))
            for migration in try store.migrations() { print("\(migration.applied ? "applied" : "pending")  \(migration.name)") }
        }
    }
}
