#!/usr/bin/env bash
# What one live event and one page merge cost ThreadDeskKit's `SupportConversation` at 1,000 /
# 10,000 / 100,000 messages (target: ≤ 1 ms each at 10,000): `bench/conversation.sh [iterations]`.
# Builds `conversation-bench` (Clients/ThreadDeskKit/Benchmarks/conversation-bench, an executable
# target of the Kit's package, not a product) in release and runs it; prints a Markdown table of
# p50 / p99 / max / mean µs per operation. No server is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --package-path Clients/ThreadDeskKit --product conversation-bench
bin="$(swift build -c release --package-path Clients/ThreadDeskKit --show-bin-path)"
echo "$(date -u +%FT%TZ), $(git rev-parse --short HEAD)$(git diff --quiet -- Clients/ThreadDeskKit || echo ' + working tree'), load: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
"$bin/conversation-bench" "$@"
