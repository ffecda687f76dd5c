import Foundation
import Hummingbird
import NIOFoundationCompat
import ThreadDeskCore
import ThreadDeskWire

/// `POST /internal/dsyms?app=&name=`: a build's dSYMs (a zip of `.dSYM` bundles, or one DWARF
/// file), behind `DSYMS_SECRET`, on the internal listener when there is one.
struct DSYMRoutes: Sendable {
    let library: DSYMLibrary
    let catalog: AppCatalog
    let secret: String

    func register(on router: Router<ThreadDeskRequestContext>) {
        router.group().add(middleware: SecretAuthentication.builds(secret: secret)).post("internal/dsyms") { request, context in
            let named = request.uri.queryParameters.get("app")
            guard let app = named.map({ AppID($0) }) ?? (catalog.apps.count == 1 ? catalog.apps[0].id : nil),
                catalog.apps.contains(where: { $0.id == app })
            else {
                throw APIError.badRequest(.invalidQuery, "Name the app the dSYMs are of (?app=), one of the deployment's apps.")
            }
            let limit = library.settings.maxDSYMBytes
            if let declared = request.headers[.contentLength].flatMap(Int.init), declared > limit { throw APIError.tooLarge(limit: limit) }
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: limit)
            } catch {
                throw APIError.tooLarge(limit: limit)
            }
            let name = request.uri.queryParameters.get("name").flatMap { $0.isEmpty || $0.count > 200 ? nil : $0 }
            do {
                let uploaded = try await library.upload(Data(buffer: body), app: app, name: name)
                return try jsonResponse(uploaded, status: .created)
            } catch let refused as DSYMLibrary.Refused {
                throw APIError.badRequest(.invalidDsym, refused.description)
            }
        }
    }
}
