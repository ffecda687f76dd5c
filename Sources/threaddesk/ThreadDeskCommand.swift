import ArgumentParser

/// `threaddesk serve | gateway | sandbox | admin | doctor`: argument parsing and wiring only.
@main
struct ThreadDeskCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "threaddesk",
        abstract: "In-app support chat whose inbox is a Discord forum.",
        subcommands: [Serve.self, Gateway.self, Sandbox.self, Admin.self, DoctorCommand.self])
}
