// The help center screen: a thin SwiftUI view over ThreadDeskKit's `HelpCenter`. Like
// SupportChatView it cannot be compiled on Linux (no SwiftUI there), so it only lays out: what is
// fetched, kept, revalidated, searched and counted is the model's, tested in the Kit's tests.
// .github/workflows/apple.yml builds it for iOS and macOS.
#if canImport(SwiftUI)
import SwiftUI
import ThreadDeskKit
#if canImport(UIKit)
import UIKit
#elseif canImport(AppKit)
import AppKit
#endif

/// The app's help center: topics to browse, a search field that searches as the user types, the
/// articles with their images, and a "Still need help?" button that opens the conversation with
/// the article named to support. Put it in a `NavigationStack` (an article opens on it):
///
/// ```swift
/// @State private var help = HelpCenter(client: support, store: FileHelpCenterStore.standard())
/// var body: some View {
///     NavigationStack {
///         HelpCenterView(helpCenter: help, conversation: conversation) { showChat = true }
///             .navigationTitle("Help")
///     }
/// }
/// ```
///
/// Offline it shows what the device kept, says so, and searches through it.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
public struct HelpCenterView: View {
    let helpCenter: HelpCenter
    let conversation: SupportConversation?
    let stillNeedHelp: () -> Void
    @State private var text = ""

    /// - Parameters:
    ///   - conversation: told which article the user read (its next message names it) when
    ///     they tap "Still need help?"; nil when the app names it itself.
    ///   - stillNeedHelp: opens the app's conversation screen.
    public init(helpCenter: HelpCenter, conversation: SupportConversation? = nil, stillNeedHelp: @escaping () -> Void) {
        self.helpCenter = helpCenter
        self.conversation = conversation
        self.stillNeedHelp = stillNeedHelp
    }

    private var isSearching: Bool { !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }

    public var body: some View {
        List {
            if helpCenter.isOffline {
                Label("Offline: showing the articles saved on this device", systemImage: "wifi.slash")
                    .font(.footnote)
                    .foregroundStyle(.secondary)
            }
            if isSearching {
                Section {
                    if helpCenter.results.isEmpty && !helpCenter.isSearching {
                        Text("No article matches. Ask us instead.").foregroundStyle(.secondary)
                    }
                    ForEach(helpCenter.results) { ArticleRow(article: $0) }
                }
            } else {
                if !helpCenter.tags.isEmpty {
                    Section("Topics") {
                        ScrollView(.horizontal, showsIndicators: false) {
                            HStack {
                                TagChip(title: "All", selected: helpCenter.selectedTag == nil) { browse(nil) }
                                ForEach(helpCenter.tags, id: \.self) { tag in
                                    TagChip(title: tag, selected: helpCenter.selectedTag == tag) { browse(tag) }
                                }
                            }
                        }
                    }
                }
                Section {
                    ForEach(helpCenter.articles) { ArticleRow(article: $0) }
                    if helpCenter.hasMore {
                        Button("More articles") { Task { await helpCenter.loadMore() } }
                            .disabled(helpCenter.isLoading)
                    }
                }
            }
            Section {
                Button("Still need help? Write to us", action: stillNeedHelp)
                    .accessibilityHint("Opens a conversation with support")
            }
        }
        .overlay {
            if helpCenter.isLoading && helpCenter.articles.isEmpty && !isSearching {
                ProgressView().accessibilityLabel("Loading articles")
            }
        }
        .searchable(text: $text, prompt: "Search help articles")
        .task(id: text) { await helpCenter.search(text) }
        .task { await helpCenter.browse(tag: helpCenter.selectedTag) }
        .refreshable { await helpCenter.browse(tag: helpCenter.selectedTag) }
        .navigationDestination(for: Article.self) { article in
            ArticleScreen(helpCenter: helpCenter, listed: article) {
                conversation?.stillNeedHelp(article: $0)
                stillNeedHelp()
            }
        }
    }

    private func browse(_ tag: String?) {
        Task { await helpCenter.browse(tag: tag) }
    }
}

@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
struct ArticleRow: View {
    let article: Article

    var body: some View {
        NavigationLink(value: article) {
            VStack(alignment: .leading, spacing: 2) {
                Text(article.title)
                if !article.tags.isEmpty {
                    Text(article.tags.joined(separator: " · ")).font(.caption).foregroundStyle(.secondary)
                }
            }
        }
        .accessibilityHint("Opens the article")
    }
}

@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
struct TagChip: View {
    let title: String
    let selected: Bool
    let action: () -> Void

    var body: some View {
        Button(action: action) {
            Text(title)
                .font(.footnote)
                .padding(.horizontal, 10)
                .padding(.vertical, 6)
                .background(selected ? Color.accentColor.opacity(0.25) : Color.gray.opacity(0.12))
                .clipShape(Capsule())
        }
        .buttonStyle(.plain)
        .accessibilityLabel(title == "All" ? "All topics" : "Topic \(title)")
        .accessibilityAddTraits(selected ? .isSelected : [])
    }
}

/// One article: shown at once as listed (or kept), then as the server has it now; its read is
/// counted by the model.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
struct ArticleScreen: View {
    let helpCenter: HelpCenter
    let listed: Article
    let stillNeedHelp: (Article) -> Void
    @State private var article: Article?
    @State private var failure: String?

    var body: some View {
        let shown = article ?? listed
        ScrollView {
            VStack(alignment: .leading, spacing: 12) {
                Text(shown.title).font(.title2.bold()).accessibilityAddTraits(.isHeader)
                if !shown.tags.isEmpty {
                    Text(shown.tags.joined(separator: " · ")).font(.caption).foregroundStyle(.secondary)
                }
                Text(Self.text(shown.text))
                ForEach(shown.attachments) { ArticleFile(helpCenter: helpCenter, file: $0) }
                if let failure {
                    Text(failure).font(.footnote).foregroundStyle(.secondary)
                }
                Button {
                    stillNeedHelp(shown)
                } label: {
                    Label("Still need help?", systemImage: "bubble.left.and.bubble.right")
                }
                .buttonStyle(.borderedProminent)
                .accessibilityHint("Opens a conversation with support, who will see you read this article")
            }
            .padding()
            .frame(maxWidth: .infinity, alignment: .leading)
        }
        .task(id: listed.id) {
            do throws(ThreadDeskError) {
                article = try await helpCenter.article(listed.id)
                failure = nil
            } catch {
                failure = error.code == .articleNotFound ? "This article is no longer available." : "Showing the saved copy of this article."
            }
        }
    }

    /// The answer's markdown (Discord's: bold, italics, links), or its plain text.
    static func text(_ markdown: String) -> AttributedString {
        (try? AttributedString(markdown: markdown, options: .init(interpretedSyntax: .inlineOnlyPreservingWhitespace)))
            ?? AttributedString(markdown)
    }
}

/// An article's file: an image shown (fetched through the model, kept on the device), any other
/// file named.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
struct ArticleFile: View {
    let helpCenter: HelpCenter
    let file: SupportMessage.Attachment
    @State private var image: Image?
    @State private var failed = false

    private var isImage: Bool { file.contentType?.hasPrefix("image/") == true }

    var body: some View {
        Group {
            if let image {
                image.resizable().scaledToFit()
                    .clipShape(RoundedRectangle(cornerRadius: 8))
                    .accessibilityLabel("Image: \(file.filename)")
            } else if failed || !isImage {
                Label(file.filename, systemImage: isImage ? "photo" : "doc").font(.footnote)
            } else {
                ProgressView()
                    .frame(maxWidth: .infinity, minHeight: 80)
                    .accessibilityLabel("Loading \(file.filename)")
            }
        }
        .task(id: file.id) {
            guard isImage, image == nil else { return }
            do throws(ThreadDeskError) {
                image = Self.image(try await helpCenter.data(for: file))
                failed = image == nil
            } catch {
                failed = true
            }
        }
    }

    static func image(_ data: Data) -> Image? {
        #if canImport(UIKit)
        UIImage(data: data).map { Image(uiImage: $0) }
        #elseif canImport(AppKit)
        NSImage(data: data).map { Image(nsImage: $0) }
        #else
        nil
        #endif
    }
}
#endif
