#!/usr/bin/env bash
# The Python wheel, as an RL engineer installs it: built from the repository with maturin
# (`pip wheel .`, the same PEP 517 build `pip install .` runs), installed into a fresh venv,
# and run from that venv's PATH: `tokscope --version`, then `tokscope build` on the demo
# store embedded in the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/build"
"$work/build/bin/pip" wheel --quiet --no-deps --wheel-dir "$work/wheels" .
wheel=$(ls "$work"/wheels/tokscope-*.whl)
echo "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"
"$python" -m venv "$work/run"
"$work/run/bin/pip" install --quiet --no-index "$wheel"
version=$(PATH="$work/run/bin:$PATH" tokscope --version)
expected="tokscope $(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
if [ "$version" != "$expected" ]; then
    echo "wheel: tokscope --version printed '$version', expected '$expected'" >&2
    exit 1
fi
[ "$(PATH="$work/run/bin:$PATH" command -v tokscope)" = "$work/run/bin/tokscope" ]
# Away from the sources: the binary must use the demo store it embeds.
table=$(cd "$work" && TOKSCOPE_EMBEDDED_ASSETS=1 "$work/run/bin/tokscope" build)
echo "$table" | tail -1
echo "$table" | grep -q '^demo-clean ' || { echo "wheel: build on the demo lists no demo-clean" >&2; exit 1; }
echo "$table" | tail -1 | grep -q '^13 rollouts' || { echo "wheel: the demo's 13 rollouts are not all there" >&2; exit 1; }
echo "wheel: ok"
