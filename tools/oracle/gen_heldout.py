#!/usr/bin/env python3
"""Generate the held-out programs (fixtures/heldout/, family `heldout`):
whole programs from heldout_programs.py, written by someone who did not
build the features they exercise, in the conformance fixture format of
gen_conformance.py (capture, transforms, manifest) with gen_sweep.py's case
helper and size caps.

With --wave2, the second wave (heldout_programs2.py, family `heldout2`,
cases `ho2_*`) into fixtures/heldout2/, on a 4-device CPU mesh for its
shard_map programs (XLA_FLAGS, as gen_spmd.py).

Usage:
  .venv-oracle/bin/python tools/oracle/gen_heldout.py            # -> fixtures/heldout
  .venv-oracle/bin/python tools/oracle/gen_heldout.py --wave2    # -> fixtures/heldout2
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
# the second wave: the child passes see it through the environment
WAVE2 = "--wave2" in sys.argv or os.environ.get("FT_HELDOUT_WAVE2") == "1"
if "--wave2" in sys.argv:
    sys.argv.remove("--wave2")
    os.environ["FT_HELDOUT_WAVE2"] = "1"
if WAVE2:  # before jax is imported (it is imported lazily, in the passes)
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
FAMILY, PREFIX = ("heldout2", "ho2") if WAVE2 else ("heldout", "ho")


def register():
    if WAVE2:
        from heldout_programs2 import register as reg
    else:
        from heldout_programs import register as reg
    reg(lambda *a, **k: gs.S(*a, family=FAMILY, prefix=PREFIX, **k), gs.U)


if __name__ == "__main__" and "--prune" in sys.argv:
    gs.prune(sys.argv[sys.argv.index("--prune") + 1])
elif __name__ == "__main__":
    out = os.path.join(ROOT, "fixtures", FAMILY)
    if "--out" in sys.argv:
        out = os.path.abspath(sys.argv[sys.argv.index("--out") + 1])
    try:
        gc.main(register=register, out_default=os.path.join(ROOT, "fixtures", FAMILY),
                script=os.path.abspath(__file__),
                generator="tools/oracle/gen_heldout.py" + (" --wave2" if WAVE2 else ""),
                doc=__doc__, lax_json=False)
    finally:
        if "--pass" not in sys.argv and "--list" not in sys.argv and \
                os.path.exists(os.path.join(out, "MANIFEST.json")):
            gs.prune(out)
