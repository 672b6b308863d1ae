# Sourced by Tests/CompileChecks/run.sh and Tests/Docs/code-blocks.sh, from the repository's root:
# type-checks one Swift file against the built modules and the macro plugin (swift-syntax is not
# rebuilt), printing the compiler's output. Needs $build, the path `swift build --show-bin-path` gives.
typecheck() {
  swiftc -typecheck "$1" -I "$build/Modules" \
    -load-plugin-executable "$build/StrataMacrosPlugin-tool#StrataMacrosPlugin" \
    -Xcc -fmodule-map-file=Sources/CLMDB/module.modulemap \
    -Xcc -fmodule-map-file=Sources/CLevelDB/module.modulemap \
    -Xcc -fmodule-map-file=Sources/CSQLite/module.modulemap \
    -Xcc -fmodule-map-file=Sources/CZstd/module.modulemap \
    -Xcc -fmodule-map-file=Sources/CCRC32C/include/module.modulemap \
    -Xcc -fmodule-map-file=Sources/CThreadSanitizerHooks/include/module.modulemap 2>&1
}
