#!/usr/bin/env python3
"""Generate the held-out programs (fixtures/heldout/, family `heldout`):
whole programs from heldout_programs.py, written by someone who did not
build the features they exercise, in the conformance fixture format of
gen_conformance.py (capture, transforms, manifest) with gen_sweep.py's case
helper and size caps.

Usage:
  .venv-oracle/bin/python tools/oracle/gen_heldout.py            # -> fixtures/heldout
  .venv-oracle/bin/python tools/oracle/gen_heldout.py --list
  .venv-oracle/bin/python tools/oracle/gen_heldout.py --out /tmp/h --only CASE...

Deterministic, as gen_conformance.py: seeds are crc32(case name).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_conformance as gc  # noqa: E402  (capture, transforms, manifest)
import gen_sweep as gs  # noqa: E402  (the case helper S, U and the size caps)

ROOT = gc.ROOT


def register():
    from heldout_programs import register as reg
    reg(lambda *a, **k: gs.S(*a, family="heldout", prefix="ho", **k), gs.U)


if __name__ == "__main__" and "--prune" in sys.argv:
    gs.prune(sys.argv[sys.argv.index("--prune") + 1])
elif __name__ == "__main__":
    out = os.path.join(ROOT, "fixtures", "heldout")
    if "--out" in sys.argv:
        out = os.path.abspath(sys.argv[sys.argv.index("--out") + 1])
    try:
        gc.main(register=register, out_default=os.path.join(ROOT, "fixtures", "heldout"),
                script=os.path.abspath(__file__), generator="tools/oracle/gen_heldout.py",
                doc=__doc__, lax_json=False)
    finally:
        if "--pass" not in sys.argv and "--list" not in sys.argv and \
                os.path.exists(os.path.join(out, "MANIFEST.json")):
            gs.prune(out)
