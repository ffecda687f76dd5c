import ThreadDeskCore

/// What users may upload with a message (`POST /v1/messages` as `multipart/form-data`).
public struct AttachmentSettings: Sendable, Hashable {
    /// Discord's limit per file for bots: 10 MiB, more on boosted servers.
    public var maxFileBytes = 10 * 1024 * 1024
    /// All files of one request together.
    public var maxTotalBytes = 25 * 1024 * 1024
    /// Files in one message: Discord takes at most 10.
    public var maxFiles = 10
    /// Media types users may send (`type/*` entries allowed).
    public var allowedTypes = AttachmentRules.defaultTypes
    /// Uploads of at least this size are read a few at a time per process (`maxConcurrentLarge`):
    /// each is held in memory once while it goes to Discord.
    public var largeUpload = 1024 * 1024
    public var maxConcurrentLarge = 4

    public init() {}
}
