#!/usr/bin/env bash
# Seed each fuzz target's corpus from the project's fixtures (idempotent).
set -euo pipefail
cd "$(dirname "$0")"
fixtures=../tests/fixtures
mkdir -p corpus/record corpus/state corpus/capture corpus/rows corpus/builder
n=0
for file in "$fixtures"/conformance/store-1-*/*.tokens.jsonl "$fixtures"/producers/store/*.tokens.jsonl; do
    split -l 1 -d -a 4 "$file" "corpus/record/$(basename "$file" .tokens.jsonl)-"
done
for file in "$fixtures"/conformance/store-1-*/*.tokens.state.json; do
    cp "$file" "corpus/state/$(basename "$(dirname "$file")")-$(basename "$file")"
done
for stem in "$fixtures"/conformance/store-1-0/*.tokens.jsonl; do
    base=${stem%.tokens.jsonl}
    n=$((n + 1))
    { cat "$base.tokens.state.json" 2>/dev/null || true; printf '\xff';
      cat "$base.tokens.intents" 2>/dev/null || true; printf '\xff';
      cat "$base.tokens.incomplete" 2>/dev/null || true; printf '\xff';
      cat "$stem"; } > "corpus/capture/rollout-$n"
done
for file in "$fixtures"/rows/*.jsonl "$fixtures"/producers/*.jsonl; do
    split -l 1 -d -a 4 "$file" "corpus/rows/$(basename "$file" .jsonl)-"
done
head -c 64 /dev/urandom > corpus/builder/random-0
echo "seeded: $(ls corpus/record | wc -l) records, $(ls corpus/state | wc -l) states, $(ls corpus/capture | wc -l) rollouts, $(ls corpus/rows | wc -l) rows"
