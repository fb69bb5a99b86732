#!/usr/bin/env bash
# The real `pip install .` check (issue 25): a fresh venv from a Python
# >= 3.10, `pip install .` from the repository (meson-python builds the
# library and the extension from scratch), then a call of the installed
# package without JAX. Slow (the whole library is compiled): run by
# FT_PYTHON_PIP_INSTALL=1 tools/python-tests, not by default. Prints the
# time it took.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
py="${FT_PIP_PYTHON:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/ft-pip-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
"$py" -m venv "$work/venv"
# FT_PIP_BUILD_DIR: a persistent meson-python build directory, so that a
# second run recompiles only what changed (1 min 31 s here instead of 5-6 min).
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  ${FT_PIP_BUILD_DIR:+-Cbuild-dir="$FT_PIP_BUILD_DIR"} "$root"
cd "$work"   # not the source tree: import the installed package
env -u FT_AOT_LIBDIR "$work/venv/bin/python" - <<'PY'
import numpy as np
import frankentrace as ft
p = ft.parse("{ lambda ; a:f32[3]. let b:f32[3] = mul a 2.0:f32[] in (b,) }")
(y,) = p(np.array([1, 2, 3], np.float32))
assert y.tolist() == [2.0, 4.0, 6.0], y
# AOT from the wheel alone: libfrankentrace_rt ships in the package.
import os
os.environ.pop("FT_AOT_LIBDIR", None)
ft._core.export_program(p, "libtwice.so", "twice")
(z,) = ft.load_aot("libtwice.so")(np.array([1, 2, 3], np.float32))
assert z.tolist() == [2.0, 4.0, 6.0], z
print("pip install check: frankentrace", ft.__version__, "installed, called, AOT round trip")
PY
echo "pip install check: $(( $(date +%s) - start )) s" >&2
