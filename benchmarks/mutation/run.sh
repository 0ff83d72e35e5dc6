#!/usr/bin/env bash
# Mutation testing of the policy, metric, figure and permission modules (see run.py).
# Creates benchmarks/mutation/.venv with mutmut on first use; the project's own .venv
# (make venv) provides everything else, through a .pth file, so requirements.txt is
# untouched. Arguments go to run.py: --module NAME, --time-box SECONDS, --without FILE.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
main_py="$repo/.venv/bin/python"
if [ ! -x "$main_py" ]; then
    echo "run 'make venv' first: the project's .venv provides Django, numpy and pytest" >&2
    exit 2
fi
if [ ! -x "$venv/bin/mutmut" ]; then
    base="$("$main_py" -c 'import sys; print(sys.base_prefix)')"
    "$base/bin/python3" -m venv "$venv"
    "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$here/requirements.txt"
    site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    "$main_py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
        > "$site/project_venv.pth"
fi
cd "$repo"
exec "$venv/bin/python" "$here/run.py" --mutmut "$venv/bin/mutmut" "$@"
