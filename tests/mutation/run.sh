#!/usr/bin/env bash
# Mutation runs (docs/testing.md): applies each one-line mutation of tests/mutation/mutations.txt
# to a scratch copy of the repository, one at a time, rebuilds incrementally, runs the test suite
# and reports whether some test failed (CAUGHT, with the first failing test) or none did
# (MISSED); a mutation that does not compile is INVALID. The caller's checkout is never touched.
#
#   tests/mutation/run.sh [--work DIR] [--only K] [--list] [--mutations FILE]
#
#   --work DIR   scratch directory to use (and reuse: its clone is moved to the repository's
#                HEAD, its build kept); default a new mktemp -d directory
#   --only K     run mutation K (1-based, as --list numbers them) alone
#   --list       print the list and check that each original text occurs exactly once in the
#                checkout's files; no clone, no build
#   --mutations FILE   another list (default tests/mutation/mutations.txt of this checkout)
#
# Exit status: 0 when every mutation run was caught; 1 when one was missed or invalid; 2 for a
# bad list or bad arguments; 3 when the unmutated build or suite fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(git -C "$here" rev-parse --show-toplevel)"
mutations="$here/mutations.txt"
work=""
only=""
list_only=0

usage() { sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --work) work="${2:?--work needs a directory}"; shift 2 ;;
    --only) only="${2:?--only needs a number}"; shift 2 ;;
    --list) list_only=1; shift ;;
    --mutations) mutations="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
if [ -n "$only" ] && ! [[ "$only" =~ ^[1-9][0-9]*$ ]]; then
  echo "run.sh: --only takes a mutation number (1, 2, ...), not '$only'" >&2
  exit 2
fi

# The list's parser and the exact-once check, shared by every step below (python3).
mutate_py='
import sys

def fields(line):
    out, cur, i = [], [], 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line) and line[i + 1] in "|\\":
            cur.append(line[i + 1]); i += 2; continue
        if c == "|":
            out.append("".join(cur)); cur = []; i += 1; continue
        cur.append(c); i += 1
    out.append("".join(cur))
    return out

def load(path):
    muts = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = fields(line)
            if len(parts) != 4 or not all(p.strip() for p in (parts[0], parts[1], parts[3])):
                print("run.sh: %s:%d: expected file|original|replacement|description, got: %s"
                      % (path, lineno, line), file=sys.stderr)
                sys.exit(2)
            muts.append(dict(n=len(muts) + 1, lineno=lineno, file=parts[0].strip(),
                             old=parts[1], new=parts[2], desc=parts[3].strip()))
    return muts

def check(m, root):
    """Line number of the original text in the file, or an error message."""
    try:
        with open(root + "/" + m["file"], encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        return None, "mutation %d (%s): cannot read %s: %s" % (m["n"], m["desc"], m["file"], e.strerror)
    count = text.count(m["old"])
    if count != 1:
        return None, ("mutation %d (%s): its original text occurs %d times in %s, not exactly once: %r"
                      % (m["n"], m["desc"], count, m["file"], m["old"]))
    if m["old"] == m["new"]:
        return None, "mutation %d (%s): the replacement is the original text" % (m["n"], m["desc"])
    return text[:text.index(m["old"])].count("\n") + 1, None

cmd, path, root = sys.argv[1], sys.argv[2], sys.argv[3]
muts = load(path)
if cmd == "check":
    # Prints "N<TAB>file<TAB>line<TAB>description" per mutation; exits 2 on the first bad one
    # after reporting every bad one.
    bad = 0
    for m in muts:
        line, err = check(m, root)
        if err:
            print("run.sh: " + err, file=sys.stderr); bad += 1
        else:
            print("%d\t%s\t%d\t%s" % (m["n"], m["file"], line, m["desc"]))
    if bad:
        print("run.sh: %d of %d mutations do not apply exactly once (fix %s)"
              % (bad, len(muts), path), file=sys.stderr)
        sys.exit(2)
elif cmd == "apply":
    m = muts[int(sys.argv[4]) - 1]
    line, err = check(m, root)
    if err:
        print("run.sh: " + err, file=sys.stderr)
        sys.exit(2)
    with open(root + "/" + m["file"], encoding="utf-8") as f:
        text = f.read()
    with open(root + "/" + m["file"], "w", encoding="utf-8") as f:
        f.write(text.replace(m["old"], m["new"], 1))
elif cmd == "show":
    m = muts[int(sys.argv[4]) - 1]
    print("  - %s\n  + %s" % (m["old"].strip(), m["new"].strip()))
'
mutate() { python3 -c "$mutate_py" "$@"; }

[ -f "$mutations" ] || { echo "run.sh: no list at $mutations" >&2; exit 2; }

# --list: against this checkout's files, read only.
if [ "$list_only" = 1 ]; then
  status=0
  table="$(mutate check "$mutations" "$repo")" || status=$?
  printf '%s\n' "$table" | while IFS=$'\t' read -r n file line desc; do
    [ -n "$n" ] || continue
    printf '%3s  %s:%s  %s\n' "$n" "$file" "$line" "$desc"
    mutate show "$mutations" "$repo" "$n"
  done
  [ "$status" = 0 ] && echo "$(printf '%s\n' "$table" | grep -c .) mutations, each applies exactly once"
  exit "$status"
fi

start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

work="${work:-$(mktemp -d -t remat-mutation.XXXXXX)}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
src="$work/src"
export POCL_CACHE_DIR="$work/pocl-cache"
mkdir -p "$POCL_CACHE_DIR"
echo "run.sh: scratch copy in $src (elapsed $(elapsed) s)"
if [ -d "$src/.git" ]; then
  # Reused: back to the repository's HEAD, whatever a run stopped midway left there.
  git -C "$src" fetch -q "$repo" HEAD
  git -C "$src" reset -q --hard FETCH_HEAD
else
  git clone -q "$repo" "$src"
fi
commit="$(git -C "$src" rev-parse HEAD)"
echo "run.sh: commit $commit ($(git -C "$src" log -1 --format=%s))"

# The list must apply to the commit under test before anything is built.
checked="$(mutate check "$mutations" "$src")" || exit 2
total="$(printf '%s\n' "$checked" | grep -c .)"
if [ -n "$only" ] && [ "$only" -gt "$total" ]; then
  echo "run.sh: --only $only, but the list has $total mutations" >&2
  exit 2
fi

cd "$src"
if [ ! -f build/build.ninja ]; then
  echo "run.sh: configuring (elapsed $(elapsed) s)"
  meson setup build -Dbuildtype=debugoptimized -Dopencl=enabled -Dcuda=disabled >"$work/setup.log" 2>&1 ||
    { echo "run.sh: meson setup failed; see $work/setup.log" >&2; exit 3; }
fi
echo "run.sh: building the unmutated source (elapsed $(elapsed) s)"
ninja -C build >"$work/build-base.log" 2>&1 ||
  { echo "run.sh: the unmutated build fails; see $work/build-base.log" >&2; exit 3; }

# Every test but `format`: it checks the source's layout, so any mutation that changes a line's
# length would count as caught by it, though no behaviour was tested.
mapfile -t tests < <(meson test -C build --list --no-rebuild 2>/dev/null | grep -vx 'format')
[ "${#tests[@]}" -gt 0 ] || { echo "run.sh: meson test --list found no tests" >&2; exit 3; }

# Runs the selected tests (the failing one's output in |log|); prints the first failing test's
# name (empty when all passed).
run_suite() {
  local log="$1" rc=0
  meson test -C build --maxfail 1 --no-rebuild --num-processes 2 --print-errorlogs "${tests[@]}" \
    >"$log" 2>&1 || rc=$?
  python3 - build/meson-logs/testlog.json "$rc" <<'EOF'
import json, sys
path, rc = sys.argv[1], int(sys.argv[2])
first = ""
try:
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            if d.get("result") in ("FAIL", "TIMEOUT", "ERROR", "UNEXPECTEDPASS"):
                first = d["name"]
                break
except (OSError, ValueError):
    pass
if not first and rc != 0:
    first = "(meson test exit %d, no failing test in its log)" % rc
print(first)
EOF
}

echo "run.sh: running ${#tests[@]} tests on the unmutated build (elapsed $(elapsed) s)"
base_start=$(date +%s)
failed="$(run_suite "$work/test-base.log")"
if [ -n "$failed" ]; then
  echo "run.sh: the unmutated suite fails ($failed); see $work/test-base.log" >&2
  exit 3
fi
echo "run.sh: unmutated suite passes in $(( $(date +%s) - base_start )) s (elapsed $(elapsed) s)"

current=""
restore() { if [ -n "$current" ]; then git -C "$src" checkout -q -- "$current"; current=""; fi; }
trap restore EXIT

results=()
caught=0
ran=0
bad=0
# The list comes in on descriptor 3: nothing the loop runs can read it from stdin.
while IFS=$'\t' read -r -u 3 n file line desc; do
  [ -n "$n" ] || continue
  [ -z "$only" ] || [ "$n" = "$only" ] || continue
  ran=$((ran + 1))
  echo "run.sh: mutation $n of $total: $file:$line: $desc (elapsed $(elapsed) s)"
  mutate show "$mutations" "$src" "$n"
  current="$file"
  mutate apply "$mutations" "$src" "$n"
  t0=$(date +%s)
  if ! ninja -C build >"$work/build-$n.log" 2>&1; then
    result="INVALID"
    first="(does not compile: $work/build-$n.log)"
    bad=$((bad + 1))
  else
    t1=$(date +%s)
    first="$(run_suite "$work/test-$n.log")"
    if [ -n "$first" ]; then
      result="CAUGHT"
      caught=$((caught + 1))
    else
      result="MISSED"
      first="-"
      bad=$((bad + 1))
    fi
    echo "run.sh:   build $((t1 - t0)) s, tests $(( $(date +%s) - t1 )) s"
  fi
  restore
  if [ "$result" = MISSED ]; then echo "run.sh:   MISSED"; else echo "run.sh:   $result ($first)"; fi
  results+=("| $n | $file:$line | $desc | $result | $first |")
done 3<<<"$checked"

echo
echo "| # | file | mutation | result | first failing test |"
echo "|---|---|---|---|---|"
printf '%s\n' "${results[@]}"
echo
echo "$caught of $ran caught"
echo "commit $commit, wall time $(elapsed) s"
[ "$bad" = 0 ]
