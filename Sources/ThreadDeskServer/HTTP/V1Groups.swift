import ThreadDeskStore
import Hummingbird
import ThreadDeskCore

/// The `/v1` route groups, by who may call: the app (the app key) and users (a live bearer
/// token). The authentication middleware sets the caller; a limited group charges its limits
/// before the handler runs. Each feature's routes register on these.
struct V1Groups {
    let app: RouterGroup<ThreadDeskRequestContext>
    let users: RouterGroup<ThreadDeskRequestContext>
    /// Users whatever their token (`APP_ATTEST=required` included): ending a session must work for
    /// a token from before attestation was required, which still proves the user beside the app key.
    let anyUsers: RouterGroup<ThreadDeskRequestContext>
    /// Users' short reads (a poll): the token check and the handler's reads share one `ReadScope`.
    let readers: RouterGroup<ThreadDeskRequestContext>
    /// Users opening event streams: the token's use is noted beside the opening, never in its path
    /// under the user's lock (`TokenAuthority.authenticate(token:notingUseApart:)`).
    let streamers: RouterGroup<ThreadDeskRequestContext>
    let quotas: Quotas
    /// App Attest, when it is on.
    let attest: (any DeviceTrust)?

    init(router: Router<ThreadDeskRequestContext>, catalog: AppCatalog, sessions: some TokenAuthority, quotas: Quotas, attest: (any DeviceTrust)? = nil) {
        app = router.group("v1").add(middleware: AppKeyAuthentication(catalog: catalog))
        let attesting = attest?.mode == .off ? nil : attest
        users = router.group("v1").add(
            middleware: UserAuthentication(sessions: sessions, attestedOnly: attest?.mode == .required, attest: attesting))
        anyUsers = router.group("v1").add(middleware: UserAuthentication(sessions: sessions))
        readers = router.group("v1").add(
            middleware: UserAuthentication(sessions: sessions, attestedOnly: attest?.mode == .required, scopesReads: true, attest: attesting))
        streamers = router.group("v1").add(
            middleware: UserAuthentication(sessions: sessions, attestedOnly: attest?.mode == .required, attest: attesting, notesUseApart: true))
        self.quotas = quotas
        self.attest = attest
    }

    /// `group`, requiring an App Attest assertion over requests `applies` picks (bodies up to
    /// `limit`; from `gate.from` bytes on, a body takes a slot of `gate` first), when App Attest is on.
    func asserting(
        _ group: RouterGroup<ThreadDeskRequestContext>, limit: Int, gate: (gate: ConcurrencyGate, from: Int)? = nil,
        when applies: @escaping @Sendable (Request, ThreadDeskRequestContext) -> Bool
    ) -> RouterGroup<ThreadDeskRequestContext> {
        guard let attest, attest.mode != .off else { return group }
        let quotas = self.quotas
        return attest.asserting(group, limit: limit, gate: gate, holder: { request, context in
            quotas.largeBodyHolder(try context.user().id, request, context)
        }, applies: applies)
    }

    /// `group`, where every request of an attested device's token carries its assertion (small
    /// bodies): what a copied token alone must not do (erase, export, redirect pushes, sign out
    /// everywhere).
    func signed(_ group: RouterGroup<ThreadDeskRequestContext>) -> RouterGroup<ThreadDeskRequestContext> {
        // A group of its own: middleware added to a shared group would reach its other routes.
        asserting(group.group(), limit: Request.smallBodyLimit) { _, _ in true }
    }

    /// Users' routes that charge `cost` (for the calling user) first.
    func users(charging cost: @escaping @Sendable (UserID) -> Quotas.Cost) -> RouterGroup<ThreadDeskRequestContext> {
        users.group().add(middleware: LimitMiddleware(quotas: quotas) { context in cost(try context.user().id) })
    }

    /// Users' event streams: past the token check, each charges `cost`, then takes a turn of
    /// `gate` to open (an opening turned away `busy` is given its charge back). Charged first: a
    /// token past its limits never takes a place in the queue others wait in.
    func streamers(
        through gate: some RouterMiddleware<ThreadDeskRequestContext>, charging cost: @escaping @Sendable (UserID) -> Quotas.Cost
    ) -> RouterGroup<ThreadDeskRequestContext> {
        streamers.group().add(middleware: LimitMiddleware(quotas: quotas) { context in cost(try context.user().id) }).add(middleware: gate)
    }

    /// Users' short reads that charge `cost` first, in one `ReadScope`.
    func readers(charging cost: @escaping @Sendable (UserID) -> Quotas.Cost) -> RouterGroup<ThreadDeskRequestContext> {
        readers.group().add(middleware: LimitMiddleware(quotas: quotas) { context in cost(try context.user().id) })
    }

    /// The app's routes that charge `cost` first.
    func app(charging cost: Quotas.Cost) -> RouterGroup<ThreadDeskRequestContext> {
        app.group().add(middleware: LimitMiddleware(quotas: quotas) { _ in cost })
    }
}
