#!/usr/bin/env bash
# tests/cli/test_bad_input.sh FTC FTLEDGER: the bad-input table of the
# command line (issue 18). Each row runs one command on one malformed input
# and asserts its exit status, that its message names what is wrong and
# where (the pattern), and that the output directory it was pointed at is
# exactly as before: no file half-written, no temporary left behind.
set -u
FTC=$1
FTLEDGER=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0
fail=0
mkdir -p o
printf 'keep' >o/out0.npy  # an old output that a failed run must not touch

# bad NAME WANT_EXIT PATTERN -- command...
bad() {
  local name=$1 want=$2 pat=$3
  shift 4
  local before after
  before=$(cd o && find . -type f -exec md5sum {} + | sort)
  "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local got=$?
  after=$(cd o && find . -type f -exec md5sum {} + | sort)
  if [ "$got" -ne "$want" ]; then
    echo "FAIL $name: exit $got, wanted $want"; sed 's/^/    /' "$tmp/err" | head -5
    fail=$((fail + 1)); return
  fi
  if ! grep -qE -- "$pat" "$tmp/out" "$tmp/err"; then
    echo "FAIL $name: output lacks /$pat/"; sed 's/^/    /' "$tmp/out" "$tmp/err" | head -6
    fail=$((fail + 1)); return
  fi
  if [ "$before" != "$after" ]; then
    echo "FAIL $name: the output directory changed"; diff <(echo "$before") <(echo "$after") | head -5
    fail=$((fail + 1)); return
  fi
  pass=$((pass + 1))
}

# npy NAME DESCR SHAPE HEX_DATA: a .npy file (version 1.0) with that header.
npy() {
  local h="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  local pad=$(( (64 - (10 + ${#h} + 1) % 64) % 64 ))
  { printf '\x93NUMPY\x01\x00'
    local len=$(( ${#h} + pad + 1 ))
    printf "\\x$(printf %02x $((len % 256)))\\x$(printf %02x $((len / 256)))"
    printf '%s' "$h"; printf "%${pad}s" ''; printf '\n'
    printf "$4"; } >"$1"
}

J() { printf '%b' "$2" >"$1"; }
J sin.jaxpr '{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) }\n'
J two.jaxpr '{ lambda ; a:f32[3] b:f32[3]. let\n    c:f32[3] = mul a b\n    d:f32[] = reduce_sum[axes=(0,) out_sharding=None] c\n  in (d,) }\n'
J int.jaxpr '{ lambda ; a:i32[3]. let\n    b:i32[] = reduce_sum[axes=(0,) out_sharding=None] a\n  in (b,) }\n'
J vec.jaxpr '{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) }\n'
npy f3.npy '<f4' '(3,)' '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40'
npy f4.npy '<f4' '(4,)' '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40'
npy i3.npy '<i4' '(3,)' '\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00'
npy d3.npy '<f8' '(3,)' '\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\xf0\x3f'
npy short.npy '<f4' '(3,)' '\x00\x00\x80\x3f\x00\x00'
npy c32.npy '<c32' '(1,)' '\x00'
npy obj.npy '|O' '(1,)' '\x00\x00\x00\x00\x00\x00\x00\x00'
npy neg.npy '<f4' '(-3,)' ''
npy huge.npy '<f4' '(4611686018427387904, 4)' ''
npy rank9.npy '<f4' '(1, 1, 1, 1, 1, 1, 1, 1, 1)' '\x00\x00\x00\x00'
printf '\x93NUMPY\x01\x00\x10\x00{"descr": 1}    \n' >badhdr.npy
printf '\x93NUMPX\x01\x00' >magic.npy
printf '\x93NUMPY\x09\x00\x10\x00' >version.npy
printf '\x93NUMPY\x01\x00\xff\xff{' >hdrlen.npy
{ printf '\x93NUMPY\x01\x00\x46\x00'; printf "{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }"; printf '%*s\n' 13 ''; printf '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40'; } >fortran.npy
: >empty.npy

# ---- jaxpr text: each error names file:line:col and what was expected
P() { J "$1.jaxpr" "$2"; bad "parse-$1" 1 "$3" -- "$FTC" run "$1.jaxpr" --in f3.npy --out-dir o; }
P empty '' "empty.jaxpr:1:1: empty input"
P no-brace 'lambda ; a:f32[3]. let in (a,)' "no-brace.jaxpr:1:1: expected '\{' to start a jaxpr"
P bad-dtype '{ lambda ; a:f33[3]. let in (a,) }' "bad-dtype.jaxpr:1:14: unknown dtype 'f33'"
P neg-dim '{ lambda ; a:f32[-1]. let in (a,) }' "neg-dim.jaxpr:1:18: expected a dimension"
P rank9 '{ lambda ; a:f32[1,1,1,1,1,1,1,1,1]. let in (a,) }' "rank9.jaxpr:1:34: rank exceeds the maximum of 8"
P overflow '{ lambda ; a:f32[4611686018427387904,4]. let in (a,) }' "overflow.jaxpr:1:14: shape .* has more than 2\\^56 elements"
P unclosed '{ lambda ; a:f32[3]. let\n  in (a,)' "unclosed.jaxpr:2:10: expected '\}' to close the jaxpr"
P trailing '{ lambda ; a:f32[3]. let in (a,) } }' "trailing.jaxpr:1:36: unexpected text after the jaxpr"
P no-let '{ lambda ; a:f32[3]. in (a,) }' "no-let.jaxpr:1:22: expected 'let'"
P undefined '{ lambda ; a:f32[3]. let\n    b:f32[3] = neg zz\n  in (b,) }' "undefined.jaxpr:2:20: undefined variable 'zz'"
P unknown-prim '{ lambda ; a:f32[3]. let\n    b:f32[3] = frob a\n  in (b,) }' "unknown-prim.jaxpr:2:16: unknown primitive 'frob'"
P unknown-param '{ lambda ; a:f32[3]. let\n    b:f32[3] = neg[foo=1] a\n  in (b,) }' "unknown-param.jaxpr:2:20: unknown param 'foo' of neg"
P dup-param '{ lambda ; a:f32[3]. let\n    b:f32[] = reduce_sum[axes=(0,) axes=(0,)] a\n  in (b,) }' "dup-param.jaxpr:2:.*duplicate param 'axes' of reduce_sum"
P missing-param '{ lambda ; a:f32[3]. let\n    b:f32[] = reduce_sum a\n  in (b,) }' "missing-param.jaxpr:2:.*missing param 'axes' of reduce_sum"
P redefined '{ lambda ; a:f32[3]. let\n    a:f32[3] = sin a\n  in (a,) }' "redefined.jaxpr:2:.*'a'"
P arity '{ lambda ; a:f32[3]. let\n    b:f32[3] = add a\n  in (b,) }' "arity.jaxpr.*add.*(2|inputs|operands)"
P shape-mismatch '{ lambda ; a:f32[3] b:f32[4]. let\n    c:f32[3] = add a b\n  in (c,) }' "shape-mismatch.jaxpr.*add.*f32\\[3\\].*f32\\[4\\]"
P dtype-mismatch '{ lambda ; a:f32[3] b:i32[3]. let\n    c:f32[3] = add a b\n  in (c,) }' "dtype-mismatch.jaxpr.*add.*(f32|i32)"
P wrong-out-aval '{ lambda ; a:f32[3]. let\n    b:f32[4] = sin a\n  in (b,) }' "wrong-out-aval.jaxpr.*sin.*f32\\[4\\]"
P int-overflow-lit '{ lambda ; a:i8[]. let\n    b:i8[] = add a 300:i8[]\n  in (b,) }' "int-overflow-lit.jaxpr:2:20: integer literal out of range for i8"
P float-overflow-lit '{ lambda ; a:f32[]. let\n    b:f32[] = add a 1e999:f32[]\n  in (b,) }' "float-overflow-lit.jaxpr:2:21: float literal 1e999 is out of range"
P bad-axes '{ lambda ; a:f32[3]. let\n    b:f32[] = reduce_sum[axes=(5,) out_sharding=None] a\n  in (b,) }' "bad-axes.jaxpr.*reduce_sum.*(axis|axes)"
P bad-perm '{ lambda ; a:f32[2,3]. let\n    b:f32[3,2] = transpose[permutation=(0, 0)] a\n  in (b,) }' "bad-perm.jaxpr.*transpose.*permutation"
P bad-reshape '{ lambda ; a:f32[2,3]. let\n    b:f32[7] = reshape[dimensions=None new_sizes=(7,) sharding=None] a\n  in (b,) }' "bad-reshape.jaxpr.*reshape"
P bad-slice '{ lambda ; a:f32[3]. let\n    b:f32[5] = slice[limit_indices=(5,) start_indices=(0,) strides=None] a\n  in (b,) }' "bad-slice.jaxpr.*slice"
P bad-broadcast '{ lambda ; a:f32[3]. let\n    b:f32[4] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4,) sharding=None] a\n  in (b,) }' "bad-broadcast.jaxpr.*broadcast_in_dim"
P bad-concat '{ lambda ; a:f32[3] b:f32[2,2]. let\n    c:f32[5] = concatenate[dimension=0] a b\n  in (c,) }' "bad-concat.jaxpr.*concatenate"
P bad-dot '{ lambda ; a:f32[3,4] b:f32[5,6]. let\n    c:f32[3,6] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b\n  in (c,) }' "bad-dot.jaxpr.*dot_general"
P bad-convert '{ lambda ; a:f32[3]. let\n    b:f32[3] = convert_element_type[new_dtype=float99 sharding=None weak_type=False] a\n  in (b,) }' "bad-convert.jaxpr:2:47: param 'new_dtype' of convert_element_type expects a dtype"
P bad-select '{ lambda ; a:f32[3] b:f32[3]. let\n    c:f32[3] = select_n a b\n  in (c,) }' "bad-select.jaxpr.*select_n"
P bad-iota '{ lambda ; . let\n    a:f32[3] = iota[dimension=2 dtype=float32 shape=(3,) sharding=None] \n  in (a,) }' "bad-iota.jaxpr.*iota"
P cond-branches '{ lambda ; a:i32[] b:f32[3]. let\n    c:f32[3] = cond[branches=(\n      { lambda ; d:f32[3]. let  in (d,) }\n      { lambda ; e:f32[4]. let  in (e,) }\n    )] a b\n  in (c,) }' "cond-branches.jaxpr.*cond"
P while-carry '{ lambda ; a:i32[]. let\n    b:i32[] = while[\n      body_jaxpr={ lambda ; c:i32[]. let d:f32[] = convert_element_type[new_dtype=float32 sharding=None weak_type=False] c in (d,) }\n      body_nconsts=0\n      cond_jaxpr={ lambda ; e:i32[]. let f:bool[] = lt e 3:i32[] in (f,) }\n      cond_nconsts=0\n    ] a\n  in (b,) }' "while-carry.jaxpr.*while"
P scan-length '{ lambda ; a:f32[3]. let\n    b:f32[] c:f32[4] = scan[\n      jaxpr={ lambda ; d:f32[] e:f32[]. let f:f32[] = add d e in (f, f) }\n      length=4 num_carry=1 num_consts=0 reverse=False unroll=1\n      _split_transpose=False\n    ] 0.0:f32[] a\n  in (b, c) }' "scan-length.jaxpr.*scan"
P control-char '{ lambda ; a:f32[3]. let\x01 in (a,) }' "control-char.jaxpr:1:.*control character 0x01"
P nesting "$(printf '%.0s{ lambda ; . let in () }' 1)$(head -c 3000 /dev/zero | tr '\0' '(')" "nesting.jaxpr:1:.*(unexpected text|nest)"
P window-overflow '{ lambda ; a:f32[4]. let\n    b:f32[4] = reduce_window_sum[base_dilation=(4611686018427387904,) padding=((0, 0),) window_dilation=(1,) window_dimensions=(1,) window_strides=(1,)] a\n  in (b,) }' "window-overflow.jaxpr.*reduce_window_sum.*window, dilations or padding of axis 0 overflow int64"
P window-pad-overflow '{ lambda ; a:f32[4]. let\n    b:f32[4] = reduce_window_sum[base_dilation=(1,) padding=((9223372036854775807, 9223372036854775807),) window_dilation=(1,) window_dimensions=(1,) window_strides=(1,)] a\n  in (b,) }' "window-pad-overflow.jaxpr.*overflow int64"
P slice-huge-stride '{ lambda ; a:f32[4]. let\n    b:f32[2] = slice[limit_indices=(4,) start_indices=(1,) strides=(9223372036854775807,)] a\n  in (b,) }' "slice-huge-stride.jaxpr.*slice.*f32\\[1\\]"
P bad-literal '{ lambda ; a:f32[]. let\n    b:f32[] = add a 1.0.0:f32[]\n  in (b,) }' "bad-literal.jaxpr:2:"
P bad-outvars '{ lambda ; a:f32[3]. let  in (a, zz) }' "bad-outvars.jaxpr:1:.*undefined variable 'zz'"

# ---- .npy inputs: each error names the file and what is wrong with it
N() { bad "npy-$1" 1 "$3" -- "$FTC" run sin.jaxpr --in "$2" --out-dir o; }
N missing nope.npy "nope.npy"
N empty empty.npy "empty.npy: .*too short"
N magic magic.npy "magic.npy: .*magic"
N version version.npy "version.npy: .*version"
N header-len hdrlen.npy "hdrlen.npy: "
N header badhdr.npy "badhdr.npy: "
N short short.npy "short.npy: .*(short|truncated|bytes)"
N c32 c32.npy "c32.npy: .*<c32"
N object obj.npy "obj.npy: .*\\|O"
N neg-dim neg.npy "neg.npy: "
N huge huge.npy "huge.npy: .*(2\\^56|elements|large)"
N rank9 rank9.npy "rank9.npy: .*more than 8 dimensions"
N directory o "o: "
bad npy-wrong-shape 1 "input 0: expected f32\\[3\\], got f32\\[4\\]" -- "$FTC" run sin.jaxpr --in f4.npy --out-dir o
bad npy-wrong-dtype 1 "input 0: expected f32\\[3\\], got i32\\[3\\]" -- "$FTC" run sin.jaxpr --in i3.npy --out-dir o
bad npy-wrong-dtype-f64 1 "input 0: expected f32\\[3\\], got f64\\[3\\]" -- "$FTC" run sin.jaxpr --in d3.npy --out-dir o
bad npy-too-few 1 "expected 2 inputs.*got 1" -- "$FTC" run two.jaxpr --in f3.npy --out-dir o
bad npy-too-many 1 "expected 1 inputs.*got 2" -- "$FTC" run sin.jaxpr --in f3.npy --in f3.npy --out-dir o
bad npy-wrong-shape-jit 1 "input 0: expected f32\\[3\\], got f32\\[4\\]" -- "$FTC" run sin.jaxpr --in f4.npy --engine jit --out-dir o
bad npy-too-few-jit 1 "expected 2 inputs" -- "$FTC" run two.jaxpr --in f3.npy --engine jit --out-dir o
bad npy-hardened-shape 1 "call boundary: input 0: expected f32\\[3\\], got f32\\[4\\]" -- "$FTC" --mode hardened run sin.jaxpr --in f4.npy --out-dir o

# ---- ftc run options
bad run-engine 2 "--engine must be interp or jit, got 'gpu'" -- "$FTC" run sin.jaxpr --in f3.npy --engine gpu --out-dir o
bad run-out-dir-file 1 "o/out0.npy.*(Not a directory|cannot)" -- "$FTC" run sin.jaxpr --in f3.npy --out-dir o/out0.npy
bad run-out-dir-missing-parent 1 "cannot create 'nodir/x': No such file or directory" -- "$FTC" run sin.jaxpr --in f3.npy --out-dir nodir/x
bad run-profile-dir 1 "profile: cannot write 'o'" -- "$FTC" run sin.jaxpr --in f3.npy --profile o
bad run-max-iter-neg 2 "--max-iterations needs a positive integer" -- "$FTC" run sin.jaxpr --max-iterations -5
bad run-max-iter-word 2 "--max-iterations needs a positive integer" -- "$FTC" run sin.jaxpr --max-iterations lots
bad run-max-sec-inf 2 "--max-seconds needs a positive number of seconds" -- "$FTC" run sin.jaxpr --max-seconds -1
bad run-engine-missing 2 "--engine needs a value" -- "$FTC" run sin.jaxpr --engine
bad run-out-dir-missing 2 "--out-dir needs a value" -- "$FTC" run sin.jaxpr --out-dir
bad run-option 2 "unknown option '--fast'" -- "$FTC" run sin.jaxpr --fast
bad run-two-files 2 "expected one FILE, got 'sin.jaxpr' and 'two.jaxpr'" -- "$FTC" run sin.jaxpr two.jaxpr
bad run-dir-as-file 1 "cannot read 'o'|'o'" -- "$FTC" run o
bad run-stdin-empty 1 "<stdin>:1:1: empty input|-:1:1: empty input|1:1: empty input" -- "$FTC" run -

# ---- global options
bad global-mode 2 "--mode takes strict or hardened, not 'safe'" -- "$FTC" --mode safe run sin.jaxpr
bad global-ledger-calls 2 "--ledger-calls takes none, hashes or bytes, not 'some'" -- "$FTC" --ledger-calls some run sin.jaxpr
bad global-ledger-missing 2 "--ledger needs a value" -- "$FTC" run sin.jaxpr --ledger
bad global-ledger-file 1 "--ledger o/out0.npy: " -- "$FTC" --ledger o/out0.npy run sin.jaxpr --in f3.npy
bad global-guard-step 2 "need --mode hardened" -- "$FTC" --guard-each-step run sin.jaxpr
bad global-unknown-cmd 2 "unknown command 'runn'" -- "$FTC" runn sin.jaxpr

# ---- transforms on the command line
bad grad-argnums 1 "argnums|argnum.*3|out of range" -- "$FTC" grad two.jaxpr --argnums 3
bad grad-argnums-word 2 "bad --argnums 'x'" -- "$FTC" grad two.jaxpr --argnums x
bad grad-argnums-neg 1 "argnums|out of range|-1" -- "$FTC" grad two.jaxpr --argnums -1
bad grad-nonscalar 1 "grad.*(scalar|f32\\[3\\])" -- "$FTC" grad vec.jaxpr
bad grad-integer 1 "grad.*(i32|integer|float)" -- "$FTC" grad int.jaxpr
bad grad-run-inputs 1 "the grad jaxpr takes 2 inputs; 1 given with --in" -- "$FTC" grad two.jaxpr --run --in f3.npy
bad grad-option 2 "unknown option '--argnum'" -- "$FTC" grad two.jaxpr --argnum 0
bad vjp-parse 1 "unknown-prim.jaxpr:2:16: unknown primitive 'frob'" -- "$FTC" vjp unknown-prim.jaxpr
bad jvp-parse 1 "undefined.jaxpr:2:20: undefined variable 'zz'" -- "$FTC" jvp undefined.jaxpr
bad vmap-in-axes-count 1 "in_axes|in-axes" -- "$FTC" vmap two.jaxpr --in-axes 0,0,0 --axis-size 2
bad vmap-in-axes-range 2 "axis|range|5" -- "$FTC" vmap sin.jaxpr --in-axes 5
bad vmap-in-axes-word 2 "in-axes|'x'" -- "$FTC" vmap sin.jaxpr --in-axes x --axis-size 2
bad vmap-axis-size 2 "--axis-size: expected a size, got '-2'" -- "$FTC" vmap sin.jaxpr --axis-size -2
bad vmap-axis-size-word 2 "--axis-size: expected a size, got 'big'" -- "$FTC" vmap sin.jaxpr --axis-size big
bad vmap-out-none 1 "out_axes|none|mapped" -- "$FTC" vmap sin.jaxpr --out-axes none --axis-size 2
bad vmap-option 2 "unknown option '--axes'" -- "$FTC" vmap sin.jaxpr --axes 0
bad jacfwd-argnum 1 "argnum|range|input" -- "$FTC" jacfwd sin.jaxpr --argnum 4
bad jacrev-integer 1 "jacrev.*(i32|integer|float)" -- "$FTC" jacrev int.jaxpr
bad hessian-integer 1 "(hessian|jacrev|jacfwd).*(i32|integer|float)" -- "$FTC" hessian int.jaxpr
T() { bad "transform-$1" 1 "$3" -- "$FTC" transform two.jaxpr "$2"; }
T empty '' "missing EXPR|empty|column 1"
T unclosed 'grad(f' "column 7: expected"
T unknown 'gard(f)' "unknown transform 'gard'"
T name 'grad(g)' "'g'|name"
T argnums-range 'grad(f, argnums=5)' "argnums"
T argnums-type 'grad(f, argnums=None)' "argnums"
T keyword 'grad(f, argnum=0)' "argnum"
T dup-keyword 'grad(f, argnums=0, argnums=1)' "argnums"
T vmap-size 'vmap(f)' "vmap needs axis_size="
T vmap-neg-size 'vmap(f, axis_size=-1)' "axis_size"
T vmap-in-axes 'vmap(f, in_axes=(0,), axis_size=2)' "column 17: in_axes has 1 entry but the function takes 2 inputs"
T trailing 'grad(f))' "column 8"
T garbage 'grad(f) junk' "column 9"
T deep "$(head -c 2000 /dev/zero | tr '\0' '(')" "column|nest|expected"
T jvp-args 'jvp(f, 1)' "jvp"
T number 'grad(f, argnums=99999999999999999999)' "argnums|column"
bad transform-in-shapes 2 "in-shapes|f32\\[|'f32\\[3'" -- "$FTC" transform two.jaxpr 'vmap(f)' --in-shapes 'f32[3'
bad transform-run-inputs 1 "expected 2 inputs" -- "$FTC" transform two.jaxpr 'grad(f)' --run --in f3.npy --out-dir o

# ---- compile
bad compile-emit 2 "emit|'wasm'" -- "$FTC" compile sin.jaxpr --emit wasm
bad compile-no-emit 2 "emit" -- "$FTC" compile sin.jaxpr
bad compile-opt-level 1 "-O takes 1, 2 or 3, not '9'" -- "$FTC" compile sin.jaxpr --emit plan -O 9
bad compile-name 1 "'1abc' is not a C identifier" -- "$FTC" compile sin.jaxpr --emit obj --name 1abc -o o/x.o
bad compile-name-rt 1 "ft_aot_rt" -- "$FTC" compile sin.jaxpr --emit obj --name ft_aot_rt_x -o o/x.o
bad compile-out-dir 1 "cannot write 'nodir/x.o'|nodir/x.o" -- "$FTC" compile sin.jaxpr --emit obj -o nodir/x.o
bad compile-out-is-dir 1 "'o'" -- "$FTC" compile sin.jaxpr --emit obj -o o
bad compile-parse 1 "bad-dtype.jaxpr:1:14: unknown dtype 'f33'" -- "$FTC" compile bad-dtype.jaxpr --emit plan
bad compile-fallback 1 "would run as interpreter fallback steps, the first equation 0 \\(reduce_max\\)" -- \
  "$FTC" run "$(J cmax.jaxpr '{ lambda ; a:c64[3]. let\n    b:c64[] = reduce_max[axes=(0,)] a\n  in (b,) }\n'; echo cmax.jaxpr)" --engine jit

# ---- opt
bad opt-tier 2 "tier|'fast'" -- "$FTC" opt sin.jaxpr --tier fast
bad opt-argnums 2 "bad --argnums 'q'" -- "$FTC" opt two.jaxpr --grad --argnums q
bad opt-parse 1 "trailing.jaxpr:1:36: unexpected text after the jaxpr" -- "$FTC" opt trailing.jaxpr

# ---- egraph rule files and terms: file:line and what
printf 'r1: (mul ?x 1) => ?x\n' >good.rules
printf '(mul a 1)\n' >good.terms
E() { printf '%b' "$2" >"$1.rules"; bad "rules-$1" 1 "$3" -- "$FTC" egraph "$1.rules" good.terms; }
E unbalanced 'r1: (mul ?x 1 => ?x\n' "unbalanced.rules:2:1: expected '\\)' but found end of input"
E no-arrow 'r1: (mul ?x 1) ?x\n' "no-arrow.rules:1"
E no-name '(mul ?x 1) => ?x\n' "no-name.rules:1"
E unbound-var 'r1: (mul ?x 1) => ?y\n' "unbound-var.rules:1.*\\?y"
E dup-name 'r1: (mul ?x 1) => ?x\nr1: (add ?x 0) => ?x\n' "dup-name.rules:2.*r1"
E deep "r1: $(head -c 2000 /dev/zero | tr '\0' '(')x => x\n" "deep.rules:1:6: expected an operator name"
E empty-pattern 'r1: () => x\n' "empty-pattern.rules:1"
printf '(mul a 1\n' >bad.terms
bad terms-unbalanced 1 "bad.terms:2:1: expected '\\)' but found end of input" -- "$FTC" egraph good.rules bad.terms
bad egraph-iters 2 "--iters wants a count" -- "$FTC" egraph good.rules good.terms --iters x
bad egraph-scheduler 2 "--scheduler is simple or backoff, not 'fast'" -- "$FTC" egraph good.rules good.terms --scheduler fast
bad egraph-missing 1 "nope.rules" -- "$FTC" egraph nope.rules good.terms

# ---- ftledger on things that are not (sound) ledgers
bad ledger-missing 3 "nope" -- "$FTLEDGER" verify nope
bad ledger-file 3 "out0.npy" -- "$FTLEDGER" verify o/out0.npy
bad ledger-empty-dir 3 "empty-l" -- "$FTLEDGER" verify "$(mkdir -p empty-l; echo empty-l)"
bad ledger-unknown-cmd 2 "unknown command 'check'|check" -- "$FTLEDGER" check o
bad ledger-diff-one 2 "diff" -- "$FTLEDGER" diff o
"$FTC" --ledger lg print sin.jaxpr >/dev/null 2>&1
bad ledger-show-seq 2 "--seq takes a record number \\(1, 2, ...\\), not 'x'" -- "$FTLEDGER" show lg --seq x
bad ledger-export-dir 3 "cannot write 'o'|'o'" -- "$FTLEDGER" export lg --html o
bad ledger-export-nodir 3 "nodir/x.html" -- "$FTLEDGER" export lg --html nodir/x.html
# A line past what parity covers was never committed: torn, and the hint
# names the command that mends it (recover), which then lets appends go on.
printf 'garbage\n' >>lg/log.jsonl
bad ledger-garbage-line 1 "torn +log.jsonl @[0-9]+ \\(record 2\\): torn last record" -- "$FTLEDGER" verify lg
bad ledger-garbage-append 1 "--ledger lg: ledger lg: not cleanly closed \\(torn tail or parity behind the log\\); run 'ftledger recover lg'" -- "$FTC" --ledger lg print sin.jaxpr
"$FTLEDGER" recover lg >/dev/null 2>&1
bad ledger-recovered-append 0 "sin" -- "$FTC" --ledger lg print sin.jaxpr
# A flipped byte inside the committed log is damage: repair, named with the directory.
printf 'X' | dd of=lg/log.jsonl bs=1 seek=20 conv=notrunc 2>/dev/null
bad ledger-corrupt 4 "corrupt +log.jsonl" -- "$FTLEDGER" verify lg
bad ledger-corrupt-append 1 "--ledger lg: ledger lg: log.jsonl is damaged .*run 'ftledger repair lg'" -- "$FTC" --ledger lg print sin.jaxpr
# A torn tail: the message names the command that mends it, which does.
"$FTC" --ledger lg-torn print sin.jaxpr >/dev/null 2>&1
printf '{"kind":"par' >>lg-torn/log.jsonl  # a record cut short by a crash
bad ledger-torn-append 1 "--ledger lg-torn: ledger lg-torn: not cleanly closed \\(torn tail or parity behind the log\\); run 'ftledger recover lg-torn' or open with auto_recover" -- "$FTC" --ledger lg-torn print sin.jaxpr
bad ledger-torn-recover 0 "truncated a torn record of 12 bytes" -- "$FTLEDGER" recover lg-torn

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
