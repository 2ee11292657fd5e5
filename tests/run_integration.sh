#!/usr/bin/env bash
# Runs one integration script with the test venv's Python (pinned python-blosc2,
# NumPy, msgpack), or says why it cannot run.
set -euo pipefail
python=$1
shift
if [[ ! -x $python ]]; then
  echo "cannot run: $python is missing; scripts/test.sh makes it (scripts/test-venv.sh BUILD_DIR)"
  exit 1
fi
exec "$python" "$@"
