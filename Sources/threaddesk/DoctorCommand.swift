import APNs
import ArgumentParser
import Foundation
import Logging
import ThreadDeskServer

/// `threaddesk doctor`: the same configuration as `serve`, checked against Discord, Apple and the
/// store; one line per check, exit 1 when any fails.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check the configuration against Discord, APNs and the store (exit 1 when a check fails).")

    @Option(help: "The .env file to read; variables already in the environment win.") var envFile = ".env"
    @Flag(help: "Print the checks as JSON ({\"passed\":…,\"checks\":[{\"name\",\"passed\",\"detail\",\"fix\"}]}).") var json = false
    @Option(help: "Send one test notification to this device token and report Apple's answer.") var pushTo: String?
    @Option(help: "The device token's environment: production or development (default: APNS_ENVIRONMENT).") var pushEnvironment: String?

    func run() async throws {
        var options = Doctor.Options(pushTo: pushTo)
        if let pushEnvironment {
            guard let environment = APNsEnvironment(rawValue: pushEnvironment) else {
                throw ValidationError("--push-environment is production or development")
            }
            options.pushEnvironment = environment
        }
        // The checks' lines say everything; the clients' own log lines would only repeat them.
        let logger = Logger(label: "threaddesk.doctor") { _ in SwiftLogNoOpLogHandler() }
        let report = await Doctor.report(environment: DotEnv.environment(path: envFile), options: options, logger: logger)
        if json {
            FileHandle.standardOutput.write(report.json + Data("\n".utf8))
        } else {
            print(report.text)
        }
        if !report.passed { throw ExitCode(1) }
    }
}
