# Sourced by Tests/CompileChecks/run.sh and Tests/Docs/code-blocks.sh, from the repository's root:
# type-checks one Swift file against the built modules and the macro plugin (swift-syntax is not
# rebuilt), printing the compiler's output. Needs $build, the path `swift build --show-bin-path` gives.
# The package's C modules are listed by hand; the dependencies' (NIO's, BoringSSL's, …, which a
# file importing StrataEtcd loads) are the module maps SwiftPM wrote for them in the build and
# those their packages ship.
typecheck() {
  local maps=() map
  for map in "$build"/*.build/module.modulemap .build/checkouts/*/Sources/*/include/module.modulemap; do
    case "$map" in *-tool.build/*|*/CRawBench.build/*|*/CAllocationCounter.build/*) continue ;; esac
    [ -f "$map" ] && maps+=(-Xcc "-fmodule-map-file=$map")
  done
  swiftc -typecheck "$1" -I "$build/Modules" \
    -load-plugin-executable "$build/StrataMacrosPlugin-tool#StrataMacrosPlugin" \
    -Xcc -fmodule-map-file=Sources/C/CLMDB/module.modulemap \
    -Xcc -fmodule-map-file=Sources/C/CLevelDB/module.modulemap \
    -Xcc -fmodule-map-file=Sources/C/CSQLite/module.modulemap \
    -Xcc -fmodule-map-file=Sources/C/CZstd/module.modulemap \
    -Xcc -fmodule-map-file=Sources/C/CLibCrypto/module.modulemap \
    -Xcc -fmodule-map-file=Sources/C/CCRC32C/include/module.modulemap \
    -Xcc -fmodule-map-file=Sources/C/CThreadSanitizerHooks/include/module.modulemap \
    "${maps[@]}" 2>&1
}
