/// The emulator speaks in the same JSON value type as the REST client's raw payloads.
@_exported import enum DiscordREST.JSON
