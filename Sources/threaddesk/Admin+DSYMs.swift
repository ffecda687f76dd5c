import ArgumentParser
import Foundation
import ThreadDeskServer

/// `threaddesk admin dsyms upload App.dSYM.zip`: a build's dSYMs to the running server, from CI,
/// as crash services take them (the server keeps them in the store for every replica).
extension Admin {
    struct DSYMs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dsyms", abstract: "Upload a build's dSYMs, so crash reports name functions and lines.", subcommands: [Upload.self])

        struct Upload: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Send a zip of .dSYM bundles (Xcode archive's dSYMs folder, zipped) or one DWARF file to POST /internal/dsyms.",
                discussion: """
                    The secret is DSYMS_SECRET (environment or .env). The server is THREADDESK_URL, or this machine's \
                    INTERNAL_PORT (else PORT). Reports that waited for these dSYMs are symbolicated at once and their notes edited.
                    """)
            @Argument(help: "The zip of .dSYM bundles, or a DWARF file.") var file: String
            @Option(help: "The app's id (a deployment of several apps; one app needs none).") var app: String?
            @Option(help: "The binary's name, for a bare DWARF file (the file's name otherwise).") var name: String?
            @Option(help: "The server's URL (its internal listener when it has one).") var server: String?
            @Option(help: "The .env file to read; variables already in the environment win.") var envFile = ".env"

            func run() async throws {
                let environment = DotEnv.environment(path: envFile)
                guard let secret = environment["DSYMS_SECRET"], !secret.isEmpty else {
                    throw ValidationError("DSYMS_SECRET is not set: the server takes dSYMs only with it")
                }
                let port = environment["INTERNAL_PORT"] ?? environment["PORT"] ?? "8080"
                guard let url = URL(string: server ?? environment["THREADDESK_URL"] ?? "http://127.0.0.1:\(port)") else {
                    throw ValidationError("not a URL: \(server ?? environment["THREADDESK_URL"] ?? "")")
                }
                do {
                    print(try await DSYMUploader.upload(URL(fileURLWithPath: file), to: url, secret: secret, app: app, name: name))
                } catch {
                    FileHandle.standardError.write(Data("\(error)\n".utf8))
                    throw ExitCode(1)
                }
            }
        }
    }
}
