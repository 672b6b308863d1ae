#!/usr/bin/env bash
# Builds Tests/Fixtures/SQLiteOnly, a package depending on StrataRecords, StrataMacros (records
# declared with @IndexKeyRecord and @Index, imported without the umbrella module) and StrataSQLite, from
# scratch, and checks that nothing of LMDB or LevelDB is built or linked: the build's commands
# compile StrataSQLite but never mention CLMDB, CLevelDB, StrataLMDB or StrataLevelDB, and ldd of
# the binary shows libsqlite3 but neither liblmdb nor libleveldb. Run by make check-modular (CI).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -R "$root/Tests/Fixtures/SQLiteOnly" "$work/SQLiteOnly"
ln -s "$root" "$work/strata"
scratch="$work/build"
cd "$work/SQLiteOnly"
swift build --product SQLiteOnly --scratch-path "$scratch" -v > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
tail -1 "$work/build.log"
bin=$(swift build --scratch-path "$scratch" --show-bin-path)
"$bin/SQLiteOnly"
failed=0
grep -q -- "-module-name StrataSQLite" "$work/build.log" || { echo "FAIL: the log shows no compile of StrataSQLite (is -v working?)"; failed=1; }
for name in CLMDB CLevelDB StrataLMDB StrataLevelDB; do
  if grep -q "$name" "$work/build.log"; then echo "FAIL: the build involves $name"; failed=1; fi
done
libraries=$(ldd "$bin/SQLiteOnly")
grep -q libsqlite3 <<<"$libraries" || { echo "FAIL: the binary does not link libsqlite3 (is ldd reading it?)"; failed=1; }
for library in liblmdb libleveldb; do
  if grep -q "$library" <<<"$libraries"; then echo "FAIL: the binary links $library"; failed=1; fi
done
[ $failed -eq 0 ] && echo "sqlite-only fixture: no LMDB or LevelDB in the build or the binary"
exit $failed
