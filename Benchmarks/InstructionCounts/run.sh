#!/usr/bin/env bash
# Instructions per record operation (callgrind), for this checkout and, given a commit, for that
# commit too, side by side: `make instructions BASE=<commit>`. Each operation runs at two counts
# and the difference is divided by the difference of the counts: set-up and start-up cancel out.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
base="${1:-}"
operations=(insert-lmdb insert-leveldb insert-feed-lmdb insert-feed-leveldb insert-observed-lmdb insert-observed-leveldb insert-1-index-lmdb insert-1-index-leveldb insert-3-indexes-lmdb insert-3-indexes-leveldb
            fetch fetch-memory lookup-unique lookup-covering scan-row foreach-row view-row engine-scan-row filter-reject-row filter-select-row
            transaction-insert transaction-fetch codable-insert codable-fetch)
low=2000 high=12000

command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 1; }

# Builds the harness against the checkout at $1 in a scratch directory; prints the binary's path.
build() {
  local checkout="$1" scratch="$2"
  mkdir -p "$scratch/harness"
  cp -R "$here/Package.swift" "$here/Sources" "$scratch/harness/"
  sed -i "s|path: \"../..\"|path: \"$checkout\"|" "$scratch/harness/Package.swift"
  swift build -c release --package-path "$scratch/harness" --scratch-path "$scratch/build" >&2
  # Without its debug information: Debian's valgrind 3.19 cannot read this toolchain's DWARF
  # ("Possibly corrupted debuginfo file", as Benchmark.md says of `strata`; the harness now meets
  # it too). Counts need only the symbol table.
  objcopy --strip-debug "$scratch/build/release/instruction-counts" "$scratch/instruction-counts"
  echo "$scratch/instruction-counts"
}

instructions() {  # binary operation count
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" "$2" "$3" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

per_operation() {  # binary operation
  local a b
  a=$(instructions "$1" "$2" $low)
  b=$(instructions "$1" "$2" $high)
  echo $(( (b - a) / (high - low) ))
}

work="$(mktemp -d)"
trap 'rm -rf "$work"; [ -n "$base" ] && git -C "$root" worktree remove --force "$work/base-checkout" 2>/dev/null || true' EXIT
current=$(build "$root" "$work/current")
if [ -n "$base" ]; then
  git -C "$root" worktree add --detach "$work/base-checkout" "$base" >&2
  before=$(build "$work/base-checkout" "$work/base")
  printf "%-26s %12s %12s %8s\n" operation "$base" current change
else
  printf "%-26s %12s\n" operation current
fi
for op in "${operations[@]}"; do
  now=$(per_operation "$current" "$op")
  if [ -n "$base" ]; then
    then=$(per_operation "$before" "$op")
    printf "%-26s %12d %12d %+7.2f%%\n" "$op" "$then" "$now" "$(echo "scale=4; ($now - $then) * 100 / $then" | bc)"
  else
    printf "%-26s %12d\n" "$op" "$now"
  fi
done
