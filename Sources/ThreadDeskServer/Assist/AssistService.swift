import AssistClient
import AsyncHTTPClient
import Deadlines
import Foundation
import Logging
import Synchronization
import ThreadDeskCore
import ThreadDeskStore

/// What a feature asks the model for: the metrics and the logs tell them apart.
enum AssistPurpose: String, Sendable, CaseIterable {
    case draft
    case away
    case translate
}

/// The user whose own message asked for a call, as the budgets see them.
struct AssistAsker: Sendable {
    /// Their network's budget key (`AssistKey.network`), when ThreadDesk noted one.
    let network: String?
    /// Whether an agent has answered them: until then they spend of the new users' share.
    let known: Bool
}

/// Why no text came: off, over a budget, the provider failed, or the answer was refused.
struct AssistRefusal: Error, Sendable, CustomStringConvertible {
    enum Reason: String, Sendable {
        case off
        case budgetApp = "budget_app"
        case budgetUser = "budget_user"
        case budgetNetwork = "budget_network"
        case budgetNewUsers = "budget_new_users"
        case provider
        case leak
        case empty
    }

    let reason: Reason
    let failure: AssistFailure?

    init(_ reason: Reason, failure: AssistFailure? = nil) { (self.reason, self.failure) = (reason, failure) }

    var description: String { failure.map { "\(reason.rawValue): \($0)" } ?? reason.rawValue }
}

/// The only way features reach a provider: the day's budgets first (an app's and a user's, kept
/// in the store so every replica counts the same), then the provider, then what it cost settled,
/// then the answer checked (`OutputGuard`), and every call counted. One client per provider,
/// over one HTTP client.
final class AssistService: Sendable {
    private let settings: AssistSettings
    private let catalog: AppCatalog
    private let configurations: [AssistProvider: AssistClient.Configuration]
    private let httpClient: @Sendable () -> HTTPClient
    private let ledger: any AssistLedger
    private let metrics: ServerMetrics
    private let time: ServerTime
    private let logger: Logger
    /// When the ledger's old days were last pruned.
    private let pruned = Mutex<Date?>(nil)

    /// Days of usage kept.
    static let keptDays = 7
    /// The least time left under the caller's deadline for a call to be begun.
    static let minimumTimeLeft: Duration = .seconds(2)

    /// Nil when no app has the assistant on.
    /// - Parameter httpClient: The client every provider is asked through (its owner shuts it down).
    init?(
        settings: AssistSettings, catalog: AppCatalog, httpClient: @escaping @Sendable () -> HTTPClient, ledger: any AssistLedger, metrics: ServerMetrics,
        logger: Logger, time: ServerTime
    ) {
        let providers = Set(catalog.apps.compactMap { settings.effective(for: $0)?.provider })
        guard !providers.isEmpty else { return nil }
        var configurations: [AssistProvider: AssistClient.Configuration] = [:]
        for provider in providers {
            var configuration = AssistClient.Configuration(baseURL: provider.url, model: provider.model, apiKey: provider.apiKey)
            configuration.deadline = settings.timeout
            configuration.attemptTimeout = min(configuration.attemptTimeout, settings.timeout)
            configurations[provider] = configuration
        }
        (self.settings, self.catalog, self.configurations, self.httpClient, self.ledger) = (settings, catalog, configurations, httpClient, ledger)
        (self.metrics, self.time, self.logger) = (metrics, time, logger)
        metrics.registerAssistSeries()
    }

    /// The HTTP client every provider is asked through: no redirects (a provider's answer must
    /// not send the key elsewhere), at most 8 connections to one provider.
    static func makeHTTPClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 8
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    private func client(for provider: AssistProvider) -> AssistClient? {
        configurations[provider].map { AssistClient(configuration: $0, httpClient: httpClient(), clock: time.clock, logger: logger) }
    }

    /// The assistant as `app` has it; nil when it is off there.
    func settings(for app: AppSettings) -> AssistAppSettings? { settings.effective(for: app) }

    /// The deployment's assistant settings (delays, lengths, the assistant's name).
    var deployment: AssistSettings { settings }

    /// Asks `app`'s provider on behalf of `user`, within the budgets; the answer, checked and
    /// cleaned by `guard`. `asker` is set when the user's own message asked for the call (a draft,
    /// an answer while away): then their network's budget counts too, and until an agent has
    /// answered them, the new users' share of the app's day.
    func complete(
        _ request: AssistRequest, purpose: AssistPurpose, app: AppSettings, user: UserID, asker: AssistAsker? = nil, guard check: OutputGuard
    ) async throws(AssistRefusal) -> String {
        guard let effective = settings.effective(for: app), let client = client(for: effective.provider) else {
            throw AssistRefusal(.off)
        }
        // A call that cannot be made in the time left is not begun: its reservation would stay
        // charged for an answer that never came.
        if let left = Deadline.remaining, left < Self.minimumTimeLeft {
            metrics.assist(purpose: purpose, outcome: Self.outcome(of: .timeout))
            logger.notice("The assistant was not asked: too little time left", metadata: ["purpose": "\(purpose.rawValue)", "left": "\(left)"])
            throw AssistRefusal(.provider, failure: .timeout)
        }
        let day = Self.day(of: time.now())
        let estimate = AssistUsage.estimatedTokens(in: request.messages) + request.maxTokens
        let budgets = Self.budgets(of: effective, app: app.id, user: user, asker: asker)
        let keys = budgets.map(\.key)
        let reserved: Bool
        do {
            reserved = try await ledger.reserveAssistTokens(
                estimate, day: day, limits: Dictionary(budgets.map { ($0.key, $0.limit) }, uniquingKeysWith: min))
        } catch {
            logger.warning("Could not reserve the assistant's tokens", metadata: ["error": "\(error)"])
            metrics.assist(purpose: purpose, outcome: "store_unavailable")
            throw AssistRefusal(.provider, failure: .unreachable("the store"))
        }
        guard reserved else {
            // The first budget this call would pass names the refusal (the app's before the others).
            var reason = AssistRefusal.Reason.budgetUser
            for budget in budgets where budget.limit > 0 {
                let used = (try? await ledger.assistTokensUsed(budget.key, day: day)) ?? 0
                if used + estimate > budget.limit {
                    reason = budget.reason
                    break
                }
            }
            metrics.assist(purpose: purpose, outcome: "refused_\(reason.rawValue)")
            logger.notice("The assistant's daily budget is spent", metadata: ["purpose": "\(purpose.rawValue)", "budget": "\(reason.rawValue)", "app": "\(app.id)"])
            throw AssistRefusal(reason)
        }
        await pruneIfDue(today: day)
        let started = ContinuousClock.now
        let completion: AssistCompletion
        do {
            completion = try await client.complete(request)
        } catch {
            // A refusal, a rate limit, a server error or no connection spent nothing: the
            // reservation goes back. An answer cut off, too slow or unreadable may have been
            // generated and billed: the estimate stays spent.
            if Self.spentNothing(error) { await settle(-estimate, day: day, keys: keys) }
            metrics.assist(purpose: purpose, outcome: Self.outcome(of: error), duration: ContinuousClock.now - started)
            logger.notice("The assistant's provider failed", metadata: ["purpose": "\(purpose.rawValue)", "error": "\(error)"])
            throw AssistRefusal(.provider, failure: error)
        }
        let spent = completion.usage.prompt + completion.usage.completion
        await settle(spent - estimate, day: day, keys: keys)
        metrics.assistTokens(prompt: completion.usage.prompt, completion: completion.usage.completion, retries: completion.attempts - 1, app: app.id)
        switch check.check(completion.text) {
        case .success(let text):
            metrics.assist(purpose: purpose, outcome: "ok", duration: ContinuousClock.now - started)
            return text
        case .failure(let refusal):
            metrics.assist(purpose: purpose, outcome: refusal == .leak ? "refused_leak" : "empty", duration: ContinuousClock.now - started)
            logger.notice("The assistant's answer was refused", metadata: ["purpose": "\(purpose.rawValue)", "reason": "\(refusal.rawValue)"])
            throw AssistRefusal(refusal == .leak ? .leak : .empty)
        }
    }

    struct Budget: Sendable {
        let key: String
        /// Tokens a day; 0: no limit.
        let limit: Int
        let reason: AssistRefusal.Reason
    }

    /// The budgets a call is charged to, the app's first: the user's, and for a call the user's
    /// own message asked for, their network's and (while no agent has answered them) the new users'
    /// share of the app's day.
    static func budgets(of settings: AssistAppSettings, app: AppID, user: UserID, asker: AssistAsker?) -> [Budget] {
        var budgets = [
            Budget(key: AssistKey.app(app), limit: settings.tokensPerDay, reason: .budgetApp),
            Budget(key: AssistKey.user(user), limit: settings.tokensPerUserPerDay, reason: .budgetUser),
        ]
        guard let asker else { return budgets }
        if let network = asker.network {
            budgets.append(Budget(key: network, limit: settings.tokensPerNetworkPerDay, reason: .budgetNetwork))
        }
        if !asker.known, settings.tokensPerDay > 0, settings.newUsersShare < 100 {
            // A share of 0 leaves new users nothing: a limit of 0 would mean none, so it is 1 token.
            let share = max(1, settings.tokensPerDay * settings.newUsersShare / 100)
            budgets.append(Budget(key: AssistKey.newUsers(app), limit: share, reason: .budgetNewUsers))
        }
        return budgets
    }

    private func settle(_ delta: Int, day: String, keys: [String]) async {
        guard delta != 0 else { return }
        do {
            try await ledger.adjustAssistTokens(delta, day: day, keys: keys)
        } catch {
            logger.warning("Could not settle the assistant's tokens", metadata: ["error": "\(error)"])
        }
    }

    /// At most hourly, days older than `keptDays` go.
    private func pruneIfDue(today: String) async {
        let now = time.now()
        let due = pruned.withLock { last in
            guard last.map({ now.timeIntervalSince($0) >= 3600 }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        let oldest = Self.day(of: now.addingTimeInterval(-Double(Self.keptDays) * 86_400))
        do {
            try await ledger.pruneAssistUsage(before: oldest)
        } catch {
            logger.notice("Could not prune the assistant's old usage", metadata: ["error": "\(error)"])
        }
    }

    /// The UTC day of `date`, `yyyy-MM-dd`: budgets reset at midnight UTC.
    static func day(of date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 1970, parts.month ?? 1, parts.day ?? 1)
    }

    static func spentNothing(_ failure: AssistFailure) -> Bool {
        switch failure {
        case .refused, .rateLimited, .server, .unreachable: true
        case .timeout, .cutStream, .malformed: false
        }
    }

    static func outcome(of failure: AssistFailure) -> String {
        switch failure {
        case .timeout: "timeout"
        case .rateLimited: "rate_limited"
        case .server: "server_error"
        case .refused: "refused_provider"
        case .malformed: "malformed"
        case .cutStream: "cut_stream"
        case .unreachable: "unreachable"
        }
    }
}
