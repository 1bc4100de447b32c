#!/usr/bin/env bash
# The workshop runner: watch mode, progress, hints, checks on a warm
# Soft-RoCE guest (scripts/workshop.sh --help; docs/WORKSHOP.md for
# instructors). The runner itself is scripts/workshop.py.
exec python3 "$(dirname "${BASH_SOURCE[0]}")/workshop.py" "$@"
