#!/usr/bin/env bash
# Compiles the Swift code blocks of the README and the DocC articles against the built modules and
# the macro plugin (run after `swift build --build-tests`; make test does).
#   - The ```swift blocks of one document, in order, form one program: a later block may use what an
#     earlier one declared. Errors point at the markdown's own lines (#sourceLocation).
#   - A block whose first line is `// swift-tools-version…` is a package manifest: it is evaluated
#     by `swift package dump-package` in a directory of its own.
#   - A block right after a line `<!-- not compiled: REASON -->` is left out (the README has none).
# Usage: code-blocks.sh FILE.md...
set -u
cd "$(dirname "$0")/../.."
build=$(swift build --show-bin-path)
source Tests/CompileChecks/typecheck.sh
out=.build/doc-code-blocks
rm -rf "$out" && mkdir -p "$out"
passed=0 failed=0

for doc in "$@"; do
  name=$(echo "$doc" | tr '/.' '__')
  # One Swift file of the document's blocks, and one directory per manifest block.
  awk -v doc="$doc" -v program="$out/$name.swift" -v manifests="$out/$name-manifest" '
    /^<!-- not compiled: .+ -->$/ { skip = 1; next }
    !inside && /^```swift[ \t]*$/ {
      inside = 1; first = 1; start = NR + 1
      if (skip) { skipping = 1 } ; skip = 0
      next
    }
    inside && /^```[ \t]*$/ {
      inside = 0
      if (!skipping && !manifest) { printf "#sourceLocation()\n" >> program }
      skipping = 0; manifest = 0
      next
    }
    inside {
      if (skipping) next
      if (first) {
        first = 0
        if ($0 ~ /^\/\/ swift-tools-version/) {
          manifest = 1; count++
          dir = manifests "-" count; system("mkdir -p " dir)
          target = dir "/Package.swift"
        } else {
          printf "#sourceLocation(file: \"%s\", line: %d)\n", doc, start >> program
        }
      }
      if (manifest) print > target; else print >> program
      blocks++
      next
    }
    NF { skip = 0 }
  ' "$doc"
  if [ -s "$out/$name.swift" ]; then
    output=$(typecheck "$out/$name.swift")
    if [ $? -eq 0 ]; then
      passed=$((passed + 1)); echo "ok   $doc: $(grep -c '^#sourceLocation(file' "$out/$name.swift") Swift blocks"
    else
      failed=$((failed + 1)); echo "FAIL $doc"; echo "$output" | grep -E "error|warning" | head -20
    fi
  fi
  for manifest in "$out/$name"-manifest-*/; do
    [ -d "$manifest" ] || continue
    mkdir -p "$manifest/Sources/App" && echo 'print("app")' > "$manifest/Sources/App/main.swift"
    if output=$(cd "$manifest" && swift package dump-package 2>&1 >/dev/null); then
      passed=$((passed + 1)); echo "ok   $doc: package manifest ($(basename "$manifest"))"
    else
      failed=$((failed + 1)); echo "FAIL $doc: package manifest"; echo "$output" | head -10
    fi
  done
done
echo "code-blocks: $passed passed, $failed failed"
[ $failed -eq 0 ]
