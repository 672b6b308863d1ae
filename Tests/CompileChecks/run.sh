#!/usr/bin/env bash
# Compile-failure checks for @IndexKeyRecord's query shapes: each snippet (with Header.swift.inc
# prepended) is type-checked against the built modules and macro plugin, so swift-syntax is not
# rebuilt per snippet. A snippet's first line says what must happen:
#   // expect: compiles           it must type-check
#   // expect: <text>             it must fail, with <text> in the compiler's output
# Run after `swift build --build-tests` (make test does).
set -u
cd "$(dirname "$0")/../.."
build=$(swift build --show-bin-path)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
for snippet in Tests/CompileChecks/*.swift; do
  name=$(basename "$snippet" .swift)
  expect=$(head -1 "$snippet" | sed -n 's|^// expect: ||p')
  cat Tests/CompileChecks/Header.swift.inc "$snippet" > "$work/$name.swift"
  output=$(swiftc -typecheck "$work/$name.swift" -I "$build/Modules" \
    -load-plugin-executable "$build/StrataMacrosPlugin-tool#StrataMacrosPlugin" \
    -Xcc -fmodule-map-file=Sources/CLMDB/module.modulemap \
    -Xcc -fmodule-map-file=Sources/CLevelDB/module.modulemap \
    -Xcc -fmodule-map-file=Sources/CSQLite/module.modulemap \
    -Xcc -fmodule-map-file=Sources/CCRC32C/include/module.modulemap 2>&1)
  status=$?
  if [ "$expect" = "compiles" ]; then
    if [ $status -eq 0 ]; then ok=1; else ok=0; fi
  else
    if [ $status -ne 0 ] && grep -qF -- "$expect" <<<"$output"; then ok=1; else ok=0; fi
  fi
  if [ $ok -eq 1 ]; then
    passed=$((passed + 1)); echo "ok   $name"
  else
    failed=$((failed + 1)); echo "FAIL $name (expected: $expect)"; echo "$output" | head -20
  fi
done
echo "compile-checks: $passed passed, $failed failed"
[ $failed -eq 0 ]
