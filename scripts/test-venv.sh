#!/usr/bin/env bash
# Makes BUILD/venv: a virtual environment of Debian's /usr/bin/python3 holding the
# pinned test-only packages (python-blosc2, NumPy, msgpack) of tests/python/requirements.txt.
# A second run with the same requirements costs nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: test-venv.sh BUILD_DIR}
venv=$build/venv
requirements=$root/tests/python/requirements.txt
stamp=$venv/.requirements
if [[ -x $venv/bin/python ]] && cmp -s "$requirements" "$stamp"; then
  exit 0
fi
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements"
cp "$requirements" "$stamp"
"$venv/bin/python" -c 'import blosc2, numpy; print("test venv: python-blosc2", blosc2.__version__, "(c-blosc2", blosc2.blosclib_version.split()[0] + "), NumPy", numpy.__version__)'
