import ArgumentParser
import Foundation
import ThreadDeskCore
import ThreadDeskServer

/// `threaddesk admin app delete ID`: an app removed from `APPS_FILE` keeps its users' data until
/// this erases them all, each as `DELETE /v1/me` erases a user.
extension Admin {
    struct App: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Erase the data of an app no longer served.", subcommands: [Delete.self])

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Erase every user of an app removed from APPS_FILE, as DELETE /v1/me erases one (threads settled as USER_DELETION says).",
                discussion: "Reads the same configuration as serve; refuses while APPS_FILE still lists the app. Run it again after a failure: users erased stay erased.")
            @OptionGroup var options: UserOptions
            @Argument(help: "The app's id.") var id: String

            func run() async throws {
                guard let app = AppID(id) else { throw ValidationError("not an app id: 1–32 of a-z, 0-9 and -") }
                do {
                    let erased = try await options.run(discord: true) { admin in try await admin.deleteApp(app) }
                    print("Erased \(erased) users of \(app)")
                } catch let refusal as UserAdministration.AppStillConfigured {
                    FileHandle.standardError.write(Data("\(refusal)\n".utf8))
                    throw ExitCode(1)
                }
            }
        }
    }
}
