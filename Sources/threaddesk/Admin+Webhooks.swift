import ArgumentParser
import Foundation
import Logging
import ThreadDeskCore
import ThreadDeskServer
import ThreadDeskStore

/// `threaddesk admin webhooks list|on`: the webhooks their receivers turned off (410 Gone), and
/// turning one on again once its receiver takes events anew.
extension Admin {
    struct Webhooks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The webhooks a receiver turned off (410 Gone); turn one on again.", subcommands: [List.self, On.self])

        static var quiet: Logger {
            var logger = Logger(label: "threaddesk.admin")
            logger.logLevel = .warning
            return logger
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the webhooks turned off, with their app, host and since when.")
            @OptionGroup var options: UserOptions

            func run() async throws {
                let off = try await withStore(url: options.storeURL, logger: Webhooks.quiet) { store in try await store.webhooksOff() }
                if off.isEmpty { print("No webhook is off.") }
                for hook in off { print("\(hook.app)  \(hook.host)  off since \(hook.since.formatted(.iso8601))  (\(hook.hook))") }
            }
        }

        struct On: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Turn a webhook on again: events recorded from now on are sent to it (those dropped at its 410 are not).")
            @OptionGroup var options: UserOptions
            @Argument(help: "The webhook's URL, exactly as configured.") var url: String

            func run() async throws {
                guard let receiver = WebhookTarget.isReceiverURL(url) else { throw ValidationError("not an http or https URL") }
                let key = WebhookTarget(url: receiver, secret: "").key(app: try options.appID())
                let wasOff = try await withStore(url: options.storeURL, logger: Webhooks.quiet) { store in
                    let off = try await store.webhooksOff().contains { $0.hook == key }
                    if off { try await store.turnWebhookOn(key) }
                    return off
                }
                print(wasOff ? "The webhook to \(receiver.host ?? "?") is on again." : "That webhook (of app \(options.app)) is not off.")
            }
        }
    }
}
