#!/usr/bin/env python3
"""Render the per-primitive param tables of fixtures/golden/FORMAT-NOTES.md
from fixtures/golden/PARAMS.json (and fixtures/compat/*/PARAMS.json).

  python3 tools/oracle/params_table.py            # print markdown
  python3 tools/oracle/params_table.py --update   # rewrite the generated
                                                  # section of FORMAT-NOTES.md

Only the text between the BEGIN/END markers in FORMAT-NOTES.md is replaced.
Needs only the Python standard library.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GOLDEN = os.path.join(ROOT, "fixtures", "golden")
COMPAT = os.path.join(ROOT, "fixtures", "compat")
NOTES = os.path.join(GOLDEN, "FORMAT-NOTES.md")
BEGIN = "<!-- BEGIN GENERATED PARAMS TABLE (tools/oracle/params_table.py) -->"
END = "<!-- END GENERATED PARAMS TABLE -->"


def esc(s):
    return s.replace("|", "\\|").replace("\n", " ")


def load(path):
    with open(path) as fh:
        return json.load(fh)


def version_key(v):
    return tuple(int(x) for x in v.split("."))


def render():
    g = load(os.path.join(GOLDEN, "PARAMS.json"))
    prims = g["primitives"]
    out = []
    out.append(f"### Params per primitive, JAX {g['jax_version']} "
               f"(from {sum(p['eqn_count'] for p in prims.values())} equations "
               f"in fixtures/golden)\n")
    out.append("Params are listed in the order they are printed.  `?` = not "
               "printed in every occurrence (elided when trivial/None; see "
               "the elision rules above).  Up to four distinct example values "
               "seen in the fixtures are shown; sub-jaxprs are abbreviated "
               "`{ lambda ... }`.  \"(no params)\" primitives print as a bare "
               "name: `b:f32[3] = sin a`.\n")
    out.append("| primitive | printed params (order) | example values |")
    out.append("|---|---|---|")
    for name in sorted(prims):
        p = prims[name]
        params = p["params"]
        if not params:
            out.append(f"| `{name}` | (no params) | |")
            continue
        cols = " ".join(f"`{v['name']}`" + ("" if v["always_printed"] else "?")
                        for v in params)
        ex = "<br>".join(
            f"`{v['name']}=` " + " / ".join(f"`{esc(e)}`" for e in v["examples"])
            for v in params)
        out.append(f"| `{name}` | {cols} | {ex} |")
    out.append("")

    versions = sorted((d for d in os.listdir(COMPAT)
                       if os.path.exists(os.path.join(COMPAT, d, "PARAMS.json"))),
                      key=version_key) if os.path.isdir(COMPAT) else []
    if versions:
        comp = {v: load(os.path.join(COMPAT, v, "PARAMS.json"))["primitives"]
                for v in versions}
        out.append("### Param-name differences in older JAX printouts "
                   "(fixtures/compat)\n")
        out.append("Only primitives whose printed param *names* differ from "
                   f"{g['jax_version']} are listed (`-` = primitive not seen "
                   "in that version's printouts).\n")
        hdr = "| primitive | " + " | ".join(versions + [g["jax_version"]]) + " |"
        out.append(hdr)
        out.append("|---" * (len(versions) + 2) + "|")
        allp = sorted(set(prims) | {p for v in versions for p in comp[v]})
        for name in allp:
            cells = []
            for v in versions:
                c = comp[v].get(name)
                cells.append("-" if c is None else
                             (" ".join(x["name"] for x in c["params"])
                              or "(none)"))
            gcell = "-" if name not in prims else (
                " ".join(x["name"] for x in prims[name]["params"]) or "(none)")
            if any(c != gcell for c in cells):
                out.append(f"| `{name}` | " +
                           " | ".join(esc(c) for c in cells + [gcell]) + " |")
        out.append("")
    return "\n".join(out)


def main():
    text = render()
    if "--update" in sys.argv:
        with open(NOTES) as fh:
            notes = fh.read()
        a, b = notes.index(BEGIN), notes.index(END)
        notes = notes[:a + len(BEGIN)] + "\n\n" + text + "\n" + notes[b:]
        with open(NOTES, "w") as fh:
            fh.write(notes)
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
