/// `POST /v1/crashes`: what the server made of one MetricKit diagnostic payload.
public struct CrashUploadResult: Codable, Sendable, Hashable {
    /// One receipt per crash or hang diagnostic in the payload.
    public var reports: [CrashReportReceipt]

    public init(reports: [CrashReportReceipt]) {
        self.reports = reports
    }
}

/// One crash or hang of a payload, as the server filed it.
public struct CrashReportReceipt: Codable, Sendable, Hashable {
    /// The report's id.
    public var id: String
    /// `crash` or `hang`.
    public var kind: String
    /// The crash group's short id (`C12`): reports of one cause share it.
    public var group: String
    /// Whether the server could name the app's frames (it holds the build's symbols).
    public var symbolicated: Bool

    public init(id: String, kind: String, group: String, symbolicated: Bool) {
        self.id = id
        self.kind = kind
        self.group = group
        self.symbolicated = symbolicated
    }
}
