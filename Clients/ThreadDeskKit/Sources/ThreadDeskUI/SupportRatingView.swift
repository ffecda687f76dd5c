// The rating row: 1–5 stars, an optional comment and a send button, over SupportConversation's
// `ratingRequest` and `rate(score:comment:)`. Like SupportChatView it cannot be compiled on Linux
// (no SwiftUI there), so it only lays out: what is checked, sent once and cleared is the model's,
// tested in the Kit's tests. .github/workflows/apple.yml builds it for iOS and macOS.
#if canImport(SwiftUI)
import SwiftUI
import ThreadDeskKit

/// Asks the user to rate the conversation support closed: a row of five stars, an optional
/// comment, and a send button. `SupportChatView` shows it while the conversation's
/// `ratingRequest` is set; it goes once the rating is sent (or was sent from another device).
/// A screen of your own shows it the same way:
///
/// ```swift
/// if conversation.ratingRequest != nil {
///     SupportRatingView(conversation: conversation)
/// }
/// ```
///
/// VoiceOver reads the stars as one adjustable "Rating" (swipe up or down to change it).
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
public struct SupportRatingView: View {
    let conversation: SupportConversation
    /// 0 until the user picks a star.
    @State private var score = 0
    @State private var comment = ""
    @State private var failure: String?

    public init(conversation: SupportConversation) {
        self.conversation = conversation
    }

    private var commentTooLong: Bool {
        comment.trimmingCharacters(in: .whitespacesAndNewlines).count > RatingSubmission.commentLimit
    }

    public var body: some View {
        VStack(alignment: .leading, spacing: 8) {
            Text("How did we do?").font(.headline)
            HStack(spacing: 6) {
                ForEach(1...5, id: \.self) { star in
                    Button {
                        score = star
                    } label: {
                        Image(systemName: star <= score ? "star.fill" : "star")
                            .font(.title2)
                            .foregroundStyle(star <= score ? Color.yellow : Color.secondary)
                    }
                    .buttonStyle(.plain)
                }
            }
            .accessibilityElement(children: .ignore)
            .accessibilityLabel("Rating")
            .accessibilityValue(score == 0 ? "No stars chosen" : "\(score) of 5 stars")
            .accessibilityAdjustableAction { direction in
                switch direction {
                case .increment: score = min(5, score + 1)
                case .decrement: score = max(1, score - 1)
                @unknown default: break
                }
            }
            TextField("Add a comment (optional)", text: $comment, axis: .vertical)
                .textFieldStyle(.roundedBorder)
                .lineLimit(1...4)
                .accessibilityLabel("Comment, optional")
            HStack {
                if commentTooLong {
                    Text("At most \(RatingSubmission.commentLimit) characters").font(.caption).foregroundStyle(.red)
                }
                Spacer()
                Button("Send rating") { send() }
                    .disabled(score == 0 || commentTooLong || conversation.isRating)
                    .accessibilityHint(score == 0 ? "Choose a rating first" : "Sends \(score) of 5 stars to support")
            }
            if let failure {
                Text(failure).font(.caption).foregroundStyle(.red)
            }
        }
        .padding()
        .background(Color.gray.opacity(0.1))
        .clipShape(RoundedRectangle(cornerRadius: 12))
        .padding(.horizontal)
    }

    private func send() {
        failure = nil
        let score = score, comment = comment
        Task {
            do throws(ThreadDeskError) {
                try await conversation.rate(score: score, comment: comment)
            } catch {
                failure = "Not sent: \(error.message)"
            }
        }
    }
}
#endif
