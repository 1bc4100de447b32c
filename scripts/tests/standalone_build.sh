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
# The stage's own targets (and what they need from common), not common's
# tests: what a plain ninja builds, plus the exercise programs (built on
# demand, but they must build here too); not the sanitizer twin, which the
# sanitize suite builds in the main tree.
targets=$(meson introspect "$out/b" --targets | python3 -c '
import json, sys, os
def wanted(t):
    on_demand_exercise = t["type"] == "executable" and "/exercises/" in t["filename"][0] and not t["name"].endswith("_sanitize")
    return t["subproject"] is None and (t["build_by_default"] or on_demand_exercise)
print(" ".join(os.path.relpath(t["filename"][0], sys.argv[1]) for t in json.load(sys.stdin) if wanted(t)))' "$out/b")
[[ -n "$targets" ]] || { echo "no targets in $stage"; exit 1; }
# shellcheck disable=SC2086  # one word per target
ninja -C "$out/b" $targets >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
echo "ok: $stage configured and built on its own: $targets"
