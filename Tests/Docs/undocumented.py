#!/usr/bin/env python3
"""Lists the public declarations without a documentation comment, from the symbol graphs of
`swift package dump-symbol-graph --minimum-access-level public`; exits 1 when there is any.

Usage: undocumented.py SYMBOLGRAPH_DIR MODULE...

Counts every public or open symbol the modules declare, in their own graphs and in their
extensions of other modules' types (`Module@Other.symbols.json`). Members the compiler
synthesizes or inherits (no source location) are not the module's declarations and are skipped.
"""
import glob
import json
import os
import sys


def declarations(directory, module):
    for path in sorted(glob.glob(os.path.join(directory, f"{module}.symbols.json"))
                       + glob.glob(os.path.join(directory, f"{module}@*.symbols.json"))):
        with open(path) as file:
            graph = json.load(file)
        for symbol in graph["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open"):
                continue
            if "SYNTHESIZED" in symbol["identifier"]["precise"] or "location" not in symbol:
                continue
            yield symbol


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    directory, modules = sys.argv[1], sys.argv[2:]
    total, missing = 0, []
    for module in modules:
        count = 0
        for symbol in declarations(directory, module):
            count += 1
            if not symbol.get("docComment", {}).get("lines"):
                location = symbol["location"]
                file = location["uri"].removeprefix("file://")
                file = os.path.relpath(file) if file.startswith("/") else file
                line = location["position"]["line"] + 1
                name = ".".join(symbol["pathComponents"])
                missing.append(f"{file}:{line}: {module}.{name} ({symbol['kind']['displayName']})")
        if count == 0:
            sys.exit(f"undocumented.py: no symbol graph with public declarations for {module} in {directory}")
        total += count
    for line in missing:
        print(line)
    print(f"documentation: {total - len(missing)} of {total} public declarations documented "
          f"in {len(modules)} modules, {len(missing)} undocumented")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
