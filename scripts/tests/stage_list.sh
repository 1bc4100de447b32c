#!/usr/bin/env bash
# Unit suite: stages.txt is the one list of stages. README.md's table,
# docs/README.md and the tour (which reads stages.txt itself) must agree with
# it: every stage, its folder and its chapter, in order, and nothing else.
#   stage_list.sh SOURCE_ROOT
set -uo pipefail
cd "$1"
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

mapfile -t lines < <(grep -v '^#' stages.txt | grep -v '^[[:space:]]*$')
[[ ${#lines[@]} -gt 0 ]] || fail "stages.txt lists no stage"
folders=() chapters=()
for line in "${lines[@]}"; do
  IFS='|' read -r folder program chapter title <<<"$line"
  folder=$(xargs <<<"$folder") program=$(xargs <<<"$program") chapter=$(xargs <<<"$chapter")
  folders+=("$folder") chapters+=("$chapter")
  [[ -f "$folder/meson.build" ]] || fail "stages.txt: $folder has no meson.build"
  [[ -f "$chapter" ]] || fail "stages.txt: $folder's chapter $chapter does not exist"
  [[ -L "subprojects/$folder" ]] || fail "subprojects/$folder (symlink to ../$folder) is missing"
  grep -q "executable('$program'," "$folder/meson.build" || fail "$folder/meson.build builds no program '$program'"
  grep -q "^| \[\`$folder\`\]($folder/) | \[[^]]*\]($chapter) |" README.md ||
    fail "README.md's stage table has no row for $folder linking $chapter"
  grep -q "(${chapter#docs/})" docs/README.md || fail "docs/README.md does not link ${chapter#docs/}"
done

# Nothing listed anywhere that stages.txt lacks, and the same order.
readme_folders=$(grep -o '^| \[`[0-9][0-9]_[a-z_0-9]*`\]' README.md | grep -o '[0-9][0-9]_[a-z_0-9]*' | paste -sd' ')
[[ "$readme_folders" == "${folders[*]}" ]] || fail "README.md lists '$readme_folders', stages.txt '${folders[*]}'"
# The chapters that read over the stages' programs, with no stage of their
# own, come after the stages' (docs/10-lossy-wire.md).
reading=(docs/10-lossy-wire.md)
for chapter in "${reading[@]}"; do
  [[ -f "$chapter" ]] || fail "the reading chapter $chapter does not exist"
  grep -q "(${chapter})" README.md || fail "README.md does not link the reading chapter $chapter"
done
index=$(grep -o '([0-9][0-9]-[a-z0-9-]*\.md)' docs/README.md | tr -d '()' | grep -v '^00-' | paste -sd' ')
expected=$(printf '%s\n' "${chapters[@]}" "${reading[@]}" | sed 's|^docs/||' | paste -sd' ')
[[ "$index" == "$expected" ]] || fail "docs/README.md lists '$index', stages.txt '$expected'"
for dir in [0-9][0-9]_*/; do
  dir=${dir%/}
  [[ " ${folders[*]} " == *" $dir "* ]] || fail "$dir is a stage folder but not in stages.txt"
done
grep -q 'stages.txt' scripts/tour.sh || fail "scripts/tour.sh does not read stages.txt"

[[ $failures -eq 0 ]] && echo "ok: ${folders[*]} everywhere, in this order"
exit $((failures > 0))
