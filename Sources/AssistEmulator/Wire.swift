import Foundation

/// The bodies the emulator sends, in the provider's field names.
enum Wire {
    struct Completion: Encodable {
        struct Choice: Encodable {
            var index = 0
            var message: Message
            var finish_reason: String
        }
        struct Message: Encodable {
            var role = "assistant"
            var content: String
        }
        var id: String
        var object = "chat.completion"
        var created: Int
        var model: String
        var choices: [Choice]
        var usage: Usage
    }

    struct Usage: Encodable {
        var prompt_tokens: Int
        var completion_tokens: Int
        var total_tokens: Int

        init(_ usage: AssistEmulator.Usage) {
            prompt_tokens = usage.prompt
            completion_tokens = usage.completion
            total_tokens = usage.total
        }
    }

    struct Chunk: Encodable {
        struct Choice: Encodable {
            var index = 0
            var delta: Delta
            var finish_reason: String?

            func encode(to encoder: any Encoder) throws {
                // `finish_reason` is null until the last chunk, and present as null.
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(index, forKey: .index)
                try container.encode(delta, forKey: .delta)
                try container.encode(finish_reason, forKey: .finish_reason)
            }
            enum CodingKeys: String, CodingKey { case index, delta, finish_reason }
        }
        struct Delta: Encodable {
            var role: String?
            var content: String?
        }
        var id: String
        var object = "chat.completion.chunk"
        var created: Int
        var model: String
        var choices: [Choice]
        var usage: Usage?
    }

    /// A completion or chunk with everything but `choices`: what `malformed` sends.
    struct Choiceless: Encodable {
        var id: String
        var object: String
        var created: Int
        var model: String
    }

    struct ModelList: Encodable {
        var object = "list"
        var data: [Model]
    }

    struct Model: Encodable {
        var id: String
        var object = "model"
        var created: Int
        var owned_by = "assist-emulator"
    }

    static func encode(_ value: some Encodable) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Our own plain structs: encoding cannot fail.
        return (try? encoder.encode(value)) ?? Data("{}".utf8)
    }
}
