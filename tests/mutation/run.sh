#!/usr/bin/env bash
# Mutation testing of one module with mutmut (tests/mutation/README.md).
#   tests/mutation/run.sh inspector/core/search.py tests/unit/test_search.py [more tests...]
# Runs in a scratch copy of the committed tree (the checkout is left alone), prints
# mutmut's summary and the surviving mutants; the copy stays for `mutmut show NAME`.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 MODULE.py TEST_PATH [TEST_PATH...]" >&2; exit 2; }
module=$1; shift
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${PT2I_MUTATION_DIR:-/tmp/pt2i-mutation}/$(basename "$module" .py)
python=${PYTHON:-python}

rm -rf "$work" && mkdir -p "$work"
git -C "$repo" archive HEAD | tar -x -C "$work"
cd "$work"
# mutmut reads its settings from setup.cfg when pyproject.toml has no [tool.mutmut]:
# the whole package is copied (so it imports), only MODULE is mutated, and each
# mutant runs only the tests that reach the function it changed.
{
  echo "[mutmut]"
  echo "source_paths = inspector"
  echo "only_mutate = $module"
  echo "pytest_add_cli_args = -p no:cacheprovider -q -x --timeout=300"
  echo "pytest_add_cli_args_test_selection ="
  for t in "$@"; do echo "    $t"; done
} > setup.cfg
export QT_QPA_PLATFORM=offscreen
# PT2I_MUTATION_CHILDREN=N caps mutmut's parallel children (default: mutmut's own, one per core)
"$python" -m mutmut run ${PT2I_MUTATION_CHILDREN:+--max-children "$PT2I_MUTATION_CHILDREN"} || true
"$python" -m mutmut results > results.txt || true
echo "--- $module: mutants by status"
"$python" - <<'EOF'
import collections, re
counts = collections.Counter()
for line in open("results.txt"):
    m = re.match(r"\s*(\S+): (\w[\w ]*)$", line)
    if m:
        counts[m.group(2)] += 1
print(dict(counts))
EOF
echo "(survivors: grep survived $work/results.txt; details: cd $work && $python -m mutmut show NAME)"
