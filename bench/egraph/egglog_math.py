#!/usr/bin/env python3
"""bench/egraph/egglog_math.py: the math micro-benchmark on egglog (PyPI).

Translates math-microbenchmark.rules and .terms (the files `ftc egraph`
reads) into one egglog program: a datatype with one constructor per
operator, integer constants as (Num i), symbols as (Var "s"), one
`rewrite` per rule, the start terms as `let`s, then `(run N)`. egglog's
`run` searches every rule on the same e-graph, applies all matches, then
rebuilds, once per iteration, like egg's SimpleScheduler and `ftc egraph
--scheduler simple`: the sizes must match egg's (bench/egraph/run checks).

Usage: egglog_math.py RULES TERMS N
Prints `stop: iterations N, e-nodes E` (E: the rows of every constructor
table after the last rebuild) and `time: S s` (parse excluded, run and
size count included). Exit 2 on a malformed rules or terms file.
"""
import re
import sys
import time

import egglog.bindings as eb

TOKEN = re.compile(r"\(|\)|[^\s()]+")


def parse(text, where):
    toks = TOKEN.findall(text)
    pos = 0

    def expr():
        nonlocal pos
        if pos >= len(toks):
            sys.exit(f"egglog_math.py: {where}: unexpected end of term")
        t = toks[pos]
        pos += 1
        if t == "(":
            if pos >= len(toks) or toks[pos] in "()":
                sys.exit(f"egglog_math.py: {where}: an operator must follow '('")
            op = toks[pos]
            pos += 1
            args = []
            while pos < len(toks) and toks[pos] != ")":
                args.append(expr())
            if pos >= len(toks):
                sys.exit(f"egglog_math.py: {where}: missing ')'")
            pos += 1
            return (op, args)
        if t == ")":
            sys.exit(f"egglog_math.py: {where}: unexpected ')'")
        return t

    e = expr()
    if pos != len(toks):
        sys.exit(f"egglog_math.py: {where}: text after the term")
    return e


def is_int(t):
    return re.fullmatch(r"-?[0-9]+", t) is not None


def emit(e, ops, pattern):
    """egglog text of term e; records each operator's arity in ops."""
    if isinstance(e, tuple):
        op, args = e
        if ops.setdefault(op, len(args)) != len(args):
            sys.exit(f"egglog_math.py: operator {op} used with {ops[op]} and {len(args)} arguments")
        return "(" + ctor(op) + "".join(" " + emit(a, ops, pattern) for a in args) + ")"
    if is_int(e):
        return f"(Num {e})"
    if e.startswith("?"):
        if not pattern:
            sys.exit(f"egglog_math.py: pattern variable {e} in a start term")
        return "v_" + e[1:]
    return f'(Var "{e}")'


NAMES = {"+": "Add", "-": "Sub", "*": "Mul", "/": "Div"}


def ctor(op):
    if op in NAMES:
        return NAMES[op]
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", op):
        sys.exit(f"egglog_math.py: operator {op!r} has no egglog name")
    return "Op_" + op


def program(rules_path, terms_path, n):
    ops, rewrites, lets = {}, [], []
    with open(rules_path) as f:
        for ln, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.fullmatch(r"([^:]+):\s*(.+?)\s*=>\s*(.+)", line)
            if not m:
                sys.exit(f"egglog_math.py: {rules_path}:{ln}: not `name: LHS => RHS`")
            where = f"{rules_path}:{ln}"
            lhs, rhs = parse(m.group(2), where), parse(m.group(3), where)
            rewrites.append(f"(rewrite {emit(lhs, ops, True)} {emit(rhs, ops, True)})")
    with open(terms_path) as f:
        for ln, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if line:
                lets.append(f"(let $t{len(lets)} {emit(parse(line, f'{terms_path}:{ln}'), ops, False)})")
    decl = ["(datatype Math (Num i64) (Var String)"]
    for op, k in ops.items():
        decl.append(f"  ({ctor(op)}{' Math' * k})")
    decl[-1] += ")"
    return "\n".join(decl + rewrites + lets + [f"(run {n})"]), ["Num", "Var"] + [ctor(o) for o in ops]


def main():
    if len(sys.argv) != 4 or not sys.argv[3].isdigit():
        sys.exit("usage: egglog_math.py RULES TERMS N")
    text, ctors = program(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    eg = eb.EGraph()
    cmds = eg.parse_program(text)
    sizes = eg.parse_program("".join(f"(print-size {c})" for c in ctors))
    t0 = time.perf_counter()
    eg.run_program(*cmds)
    out = eg.run_program(*sizes)
    t = time.perf_counter() - t0
    nodes = sum(o.size for o in out)
    print(f"stop: iterations {sys.argv[3]}, e-nodes {nodes}")
    print(f"time: {t:.3f} s")


if __name__ == "__main__":
    main()
