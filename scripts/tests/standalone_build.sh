#!/usr/bin/env bash
# The build suite: a stage must configure and build on its own, through its
# own subprojects/common link, as a reader who copies one folder would do it:
#   meson setup b 01_devices && ninja -C b
#   standalone_build.sh SOURCE_ROOT STAGE
set -euo pipefail
source_root="$1"
stage="$2"
out=$(mktemp -d "${TMPDIR:-/tmp}/standalone_${stage}.XXXXXX")
trap 'rm -rf "$out"' EXIT
cd "$source_root"
# -Dbuildtype=plain: what this proves is that the stage configures, compiles
# without a warning and links on its own; optimizing each of the nine copies
# of common/ only took time (about 40% of it). The main tree builds at -O2,
# where the optimizer's own warnings show.
meson setup --werror -Dbuildtype=plain "$out/b" "$stage" >"$out/setup.log" 2>&1 || { cat "$out/setup.log"; exit 1; }
# The stage's own programs (and what they need from common): what a plain
# ninja builds, plus the exercise programs (built on demand, but they must
# build here too). Not the test executables: configuring found doctest, and
# the main tree compiles the same test sources against the same common/ (it
# halved this suite's time); not the sanitizer twin, which the sanitize suite
# builds in the main tree.
meson introspect "$out/b" --tests >"$out/tests.json"
targets=$(meson introspect "$out/b" --targets | python3 -c '
import json, sys, os
tests = {os.path.realpath(t["cmd"][0]) for t in json.load(open(sys.argv[2]))}  # what each test runs
def wanted(t):
    path = t["filename"][0]
    on_demand_exercise = t["type"] == "executable" and "/exercises/" in path and not t["name"].endswith("_sanitize")
    return (t["subproject"] is None and os.path.realpath(path) not in tests
            and (t["build_by_default"] or on_demand_exercise))
print(" ".join(os.path.relpath(t["filename"][0], sys.argv[1]) for t in json.load(sys.stdin) if wanted(t)))' "$out/b" "$out/tests.json")
[[ -n "$targets" ]] || { echo "no targets in $stage"; exit 1; }
# shellcheck disable=SC2086  # one word per target
ninja -C "$out/b" $targets >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
echo "ok: $stage configured and built on its own: $targets"
