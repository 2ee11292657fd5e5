#!/usr/bin/env bash
# Makes BUILD/venv-caterva2: a virtual environment of Debian's /usr/bin/python3
# holding the pinned Caterva2 server (tests/python/caterva2-requirements.txt)
# that test_caterva2.py and the bench's caterva2 group start on 127.0.0.1.
# Apart from BUILD/venv because it is big; a second run with the same
# requirements costs nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: caterva2-venv.sh BUILD_DIR}
venv=$build/venv-caterva2
requirements=$root/tests/python/caterva2-requirements.txt
stamp=$venv/.requirements
if [[ -x $venv/bin/cat2-server ]] && cmp -s "$requirements" "$stamp"; then
  exit 0
fi
rm -rf "$venv"
started=$SECONDS
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements"
cp "$requirements" "$stamp"
echo "caterva2 venv: $("$venv/bin/python" -c 'import caterva2, blosc2; print("caterva2", caterva2.__version__, "python-blosc2", blosc2.__version__)'), installed in $((SECONDS - started)) s"
