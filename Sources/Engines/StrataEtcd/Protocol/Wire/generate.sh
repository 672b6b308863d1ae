#!/usr/bin/env bash
# Regenerates etcd.pb.swift and etcd.grpc.swift from etcd.proto. The build never runs this: the
# generated files are committed. Needs protoc (Debian's protobuf-compiler) and builds the two
# plugins once, in a scratch package outside the repository (about 3 minutes), from the same
# versions of swift-protobuf and grpc-swift-protobuf that Package.swift resolves.
#   bash Sources/Engines/StrataEtcd/Protocol/Wire/generate.sh [scratch directory]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scratch="${1:-${TMPDIR:-/tmp}/strata-protoc-plugins}"
command -v protoc >/dev/null || { echo "protoc is missing: apt-get install protobuf-compiler"; exit 1; }
mkdir -p "$scratch/Sources/plugins"
cat > "$scratch/Package.swift" <<'PACKAGE'
// swift-tools-version: 6.1
import PackageDescription
let package = Package(
    name: "plugins",
    dependencies: [
        .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", exact: "2.4.1"),
    ],
    targets: [.executableTarget(name: "plugins", dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")])]
)
PACKAGE
echo 'print("the plugins are built beside this")' > "$scratch/Sources/plugins/main.swift"
swift build -c release --package-path "$scratch" --product protoc-gen-swift
swift build -c release --package-path "$scratch" --product protoc-gen-grpc-swift-2
bin="$(swift build -c release --package-path "$scratch" --show-bin-path)"
cd "$here"
protoc etcd.proto --plugin=protoc-gen-swift="$bin/protoc-gen-swift" --swift_out=. --swift_opt=Visibility=Internal,UseAccessLevelOnImports=true
protoc etcd.proto --plugin=protoc-gen-grpc-swift="$bin/protoc-gen-grpc-swift-2" --grpc-swift_out=. \
  --grpc-swift_opt=Visibility=Internal,Client=true,Server=false,UseAccessLevelOnImports=true
echo "generated: $here/etcd.pb.swift $here/etcd.grpc.swift"
