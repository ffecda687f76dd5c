#!/usr/bin/env bash
# Suggestions per second of the ranking (Sources/ThreadDeskCore/Suggestions.swift) over curated
# answers: `bench/suggestions.sh [answers] [seconds] [git revision]`. Compiled with -O as one module
# with the ranking's source (as scripts/fuzz builds its targets); prints one JSON line. With a git
# revision, the ranking as it was there is built too and the two run in turn, three times each
# (before, after, before, …), each line named; equal `resultsDigest`s mean both rank alike.
set -euo pipefail
cd "$(dirname "$0")/.."
work=.build/bench-suggestions
mkdir -p "$work"
build() { # source file, binary
    grep -v -E '^import ThreadDeskCore$' "$1" > "$work/Suggestions-$2.swift"
    swiftc -O -parse-as-library -module-name SuggestionsBench "$work/Suggestions-$2.swift" bench/suggestions-bench/main.swift -o "$work/$2"
}
build Sources/ThreadDeskCore/Suggestions.swift suggestions-bench
if [[ $# -lt 3 ]]; then
    "$work/suggestions-bench" "${1:-1000}" "${2:-3}"
    exit 0
fi
git show "$3:Sources/ThreadDeskCore/Suggestions.swift" > "$work/before.swift"
build "$work/before.swift" suggestions-before
for run in 1 2 3; do
    echo "before ($3), run $run: $("$work/suggestions-before" "$1" "$2")"
    echo "after (working tree), run $run: $("$work/suggestions-bench" "$1" "$2")"
done
