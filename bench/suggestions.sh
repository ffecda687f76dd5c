#!/usr/bin/env bash
# Suggestions per second of the ranking (Sources/ThreadDeskCore/Suggestions.swift) over 1,000
# curated answers: `bench/suggestions.sh [answers] [seconds]`. Compiled with -O as one module
# with the ranking's source (as scripts/fuzz builds its targets); prints one JSON line.
set -euo pipefail
cd "$(dirname "$0")/.."
work=.build/bench-suggestions
mkdir -p "$work"
grep -v -E '^import ThreadDeskCore$' Sources/ThreadDeskCore/Suggestions.swift > "$work/Suggestions.swift"
swiftc -O -parse-as-library -module-name SuggestionsBench "$work/Suggestions.swift" bench/suggestions-bench/main.swift -o "$work/suggestions-bench"
"$work/suggestions-bench" "${1:-1000}" "${2:-3}"
