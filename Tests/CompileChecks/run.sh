#!/usr/bin/env bash
# Compile-time checks for @IndexKeyRecord: each file is type-checked once against the built
# modules and macro plugin (swift-syntax is not rebuilt). Two kinds of file:
#   annotated   lines ending in `// expected-error {{text}}` must give an error containing
#               text on that line; every other line must compile (key1.swift … key4.swift:
#               every query shape on keys of 1 to 4 components, written by generate.py)
#   // expect:  the first line says `compiles`, or a text the compiler's output must contain
#               (for errors reported inside a macro expansion)
# Run after `swift build --build-tests` (make test does). Prints each file's type-check time.
set -u
cd "$(dirname "$0")/../.."
build=$(swift build --show-bin-path)
passed=0 failed=0

source Tests/CompileChecks/typecheck.sh

# Compares the compiler's errors with the file's annotations; prints each mismatch.
check_annotations() {
  local file=$1 output=$2 ok=1 line number text
  # "<file>:<line>:<col>: error: <message>" as "<line><TAB><message>"
  local errors
  errors=$(grep -E "^[^ ]*$(basename "$file"):[0-9]+:[0-9]+: error: " <<<"$output" \
    | sed -E 's/^[^ ]*:([0-9]+):[0-9]+: error: (.*)$/\1\t\2/' | sort -u)
  while IFS= read -r line; do
    number=${line%%:*}
    text=$(sed -E 's/.*expected-error \{\{(.*)\}\}.*/\1/' <<<"$line")
    if ! awk -F'\t' -v n="$number" -v t="$text" '$1 == n && index($2, t) { found = 1 } END { exit !found }' <<<"$errors"; then
      echo "  line $number: expected an error containing \"$text\"; got: $(awk -F'\t' -v n="$number" '$1 == n { print $2 }' <<<"$errors" | head -1)"
      ok=0
    fi
  done < <(grep -n "expected-error {{" "$file")
  while IFS=$'\t' read -r number text; do
    [ -z "$number" ] && continue
    if ! sed -n "${number}p" "$file" | grep -q "expected-error {{"; then
      echo "  line $number: unexpected error: $text"
      ok=0
    fi
  done <<<"$errors"
  # An error anywhere else (inside a macro expansion, another file) is unexpected too.
  if grep -E "^[^ |].*: error: " <<<"$output" | grep -vqE "^[^ ]*$(basename "$file"):[0-9]+:[0-9]+: error: "; then
    echo "  errors outside the file's lines:"
    grep -E "^[^ |].*: error: " <<<"$output" | grep -vE "^[^ ]*$(basename "$file"):[0-9]+:[0-9]+: error: " | head -5 | sed 's/^/    /'
    ok=0
  fi
  [ $ok -eq 1 ]
}

for file in Tests/CompileChecks/*.swift; do
  name=$(basename "$file" .swift)
  start=$(date +%s.%N)
  output=$(typecheck "$file")
  status=$?
  seconds=$(echo "$(date +%s.%N) - $start" | bc 2>/dev/null || echo "?")
  if grep -q "expected-error {{" "$file"; then
    report=$(check_annotations "$file" "$output") && ok=1 || ok=0
    detail="$(grep -c "expected-error {{" "$file") expected errors"
  else
    expect=$(head -1 "$file" | sed -n 's|^// expect: ||p')
    report=$(echo "$output" | head -20)
    if [ "$expect" = "compiles" ]; then
      [ $status -eq 0 ] && ok=1 || ok=0
    else
      [ $status -ne 0 ] && grep -qF -- "$expect" <<<"$output" && ok=1 || ok=0
    fi
    detail="expect: $expect"
  fi
  if [ $ok -eq 1 ]; then
    passed=$((passed + 1)); printf 'ok   %-32s %6ss  (%s)\n' "$name" "${seconds:0:5}" "$detail"
  else
    failed=$((failed + 1)); echo "FAIL $name ($detail)"; echo "$report"
  fi
done
echo "compile-checks: $passed passed, $failed failed"
[ $failed -eq 0 ]
