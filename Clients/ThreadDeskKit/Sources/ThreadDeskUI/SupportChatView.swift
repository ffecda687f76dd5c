// The support chat screen: a thin SwiftUI view over ThreadDeskKit's `SupportConversation`.
// It cannot be compiled on Linux (no SwiftUI there), so it stays declarative: every decision
// (order, delivery, typing, unread, suggestions, away, ratings) is the model's, tested in the Kit's tests;
// this file only lays it out. .github/workflows/apple.yml builds it for iOS and macOS.
#if canImport(SwiftUI)
import SwiftUI
import ThreadDeskKit

/// The conversation with support: messages with delivery marks, support typing, suggestion
/// chips for the draft, the away banner, the rating row (``SupportRatingView``) while support
/// asks for a rating, and a composer.
///
/// ```swift
/// @State private var conversation = SupportConversation(client: support, store: FileConversationStore.standard())
/// var body: some View {
///     NavigationStack {
///         SupportChatView(conversation: conversation)
///             .navigationTitle("Support")
///     }
///     .task { await conversation.run() }
/// }
/// ```
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
public struct SupportChatView: View {
    @Bindable var conversation: SupportConversation
    /// Shown for a file the user picks (the app supplies its own picker: photos, documents).
    var attach: (() -> Void)?

    public init(conversation: SupportConversation, attach: (() -> Void)? = nil) {
        self.conversation = conversation
        self.attach = attach
    }

    public var body: some View {
        VStack(spacing: 0) {
            if let status = conversation.supportStatus, status.status == .away {
                AwayBanner(status: status)
            }
            ScrollViewReader { reader in
                ScrollView {
                    LazyVStack(alignment: .leading, spacing: 8) {
                        if conversation.hasEarlier {
                            Button("Earlier messages") { Task { await conversation.loadEarlier() } }
                                .frame(maxWidth: .infinity)
                                .disabled(conversation.isLoadingEarlier)
                        }
                        ForEach(conversation.messages) { message in
                            Bubble(message: message, conversation: conversation).id(message.id)
                        }
                        if conversation.isSupportTyping {
                            Text("Support is typing…").font(.footnote).foregroundStyle(.secondary).id("typing")
                        }
                    }
                    .padding()
                }
                .onChange(of: conversation.messages.last?.id) { _, last in
                    if let last { reader.scrollTo(last, anchor: .bottom) }
                    conversation.markRead()
                }
            }
            if !conversation.suggestions.isEmpty {
                ScrollView(.horizontal, showsIndicators: false) {
                    HStack {
                        ForEach(conversation.suggestions) { suggestion in
                            SuggestionChip(suggestion: suggestion) { conversation.opened(suggestion) }
                        }
                    }
                    .padding(.horizontal)
                }
            }
            if let request = conversation.ratingRequest {
                // A new request starts with no stars chosen.
                SupportRatingView(conversation: conversation).id(request.conversationId)
            }
            Composer(conversation: conversation, attach: attach)
        }
        .onAppear { conversation.markRead() }
    }
}

@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
struct Bubble: View {
    let message: ConversationMessage
    let conversation: SupportConversation

    var body: some View {
        HStack {
            if message.isFromUser { Spacer(minLength: 40) }
            VStack(alignment: message.isFromUser ? .trailing : .leading, spacing: 2) {
                if case .support(let name) = message.author, let name {
                    Text(message.isAutomatic ? "\(name) · automatic answer" : name).font(.caption).foregroundStyle(.secondary)
                }
                if !message.text.isEmpty {
                    Text(message.text)
                        .padding(10)
                        .background(message.isFromUser ? Color.accentColor.opacity(0.2) : Color.gray.opacity(0.15))
                        .clipShape(RoundedRectangle(cornerRadius: 14))
                }
                ForEach(message.files) { file in
                    Label(file.filename, systemImage: file.isImage ? "photo" : "doc")
                        .font(.footnote)
                        .opacity(file.uploadProgress == nil ? 1 : 0.5)
                }
                HStack(spacing: 4) {
                    Text(message.date, style: .time)
                    if message.isEdited { Text("edited") }
                    if message.isFromUser { DeliveryMark(delivery: message.delivery) }
                }
                .font(.caption2)
                .foregroundStyle(.secondary)
                if case .failed(let reason) = message.delivery {
                    HStack {
                        Button("Retry") { conversation.retry(message) }
                        Button("Delete", role: .destructive) { conversation.delete(message) }
                    }
                    .font(.caption)
                    .help(reason ?? "")
                }
            }
            if !message.isFromUser { Spacer(minLength: 40) }
        }
    }
}

@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
struct DeliveryMark: View {
    let delivery: ConversationMessage.Delivery

    var body: some View {
        switch delivery {
        case .pending: Image(systemName: "clock").accessibilityLabel("Not sent yet")
        case .queued: Image(systemName: "checkmark").accessibilityLabel("Received")
        case .sent: Image(systemName: "checkmark.circle.fill").accessibilityLabel("Delivered to support")
        case .failed: Image(systemName: "exclamationmark.circle.fill").foregroundStyle(.red).accessibilityLabel("Not sent")
        }
    }
}

@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
struct AwayBanner: View {
    let status: SupportStatus

    var body: some View {
        Text(status.nextOpening.map { "Support is away until \($0). Write anyway: we will answer." } ?? "Support is away. Write anyway: we will answer.")
            .font(.footnote)
            .frame(maxWidth: .infinity)
            .padding(8)
            .background(Color.yellow.opacity(0.2))
    }
}

@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
struct SuggestionChip: View {
    let suggestion: Suggestion
    let open: () -> Void
    @State private var expanded = false

    var body: some View {
        Button {
            expanded.toggle()
            open()
        } label: {
            VStack(alignment: .leading) {
                Text(suggestion.title).font(.footnote.bold())
                if expanded { Text(suggestion.answer).font(.footnote) }
            }
            .padding(8)
            .background(Color.gray.opacity(0.12))
            .clipShape(RoundedRectangle(cornerRadius: 10))
        }
        .buttonStyle(.plain)
    }
}

@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
struct Composer: View {
    @Bindable var conversation: SupportConversation
    var attach: (() -> Void)?

    var body: some View {
        HStack(alignment: .bottom) {
            if let attach {
                Button(action: attach) { Image(systemName: "paperclip") }.accessibilityLabel("Attach a file")
            }
            TextField("Message", text: $conversation.draft, axis: .vertical)
                .textFieldStyle(.roundedBorder)
                .lineLimit(1...5)
            Button("Send") { conversation.send() }
                .disabled(conversation.draft.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty && conversation.draftFiles.isEmpty)
        }
        .padding()
    }
}
#endif
