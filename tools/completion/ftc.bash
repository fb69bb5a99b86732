# bash completion for ftc and ftledger (FrankenTrace). Installed to
# share/bash-completion/completions/ as ftc and ftledger (this one file twice).

_ftc() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local cmds="demo print hash run dot coverage egraph jvp vjp grad vmap jacfwd jacrev hessian compile transform opt cache help"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "$cmds --help --version --ledger --ledger-calls --dist" -- "$cur")); return
  fi
  case $prev in
    --in) COMPREPLY=($(compgen -f -X '!*.npy' -- "$cur") $(compgen -d -- "$cur")); return ;;
    --out-dir|--ledger) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --emit) COMPREPLY=($(compgen -W "plan llvm asm obj so h" -- "$cur")); return ;;
    --engine) COMPREPLY=($(compgen -W "interp jit" -- "$cur")); return ;;
    --tier) COMPREPLY=($(compgen -W "exact algebraic" -- "$cur")); return ;;
    --ledger-calls) COMPREPLY=($(compgen -W "none hashes bytes" -- "$cur")); return ;;
  esac
  local opts="--help --quiet --ledger --ledger-calls"
  case ${COMP_WORDS[1]} in
    run) opts="$opts --in --out-dir --engine --profile --stats --max-iterations --max-seconds" ;;
    grad) opts="$opts --argnums --has-aux --value --run --in" ;;
    jvp|vjp) opts="$opts --run --in" ;;
    vmap) opts="$opts --in-axes --out-axes --axis-size --in" ;;
    jacfwd|jacrev|hessian) opts="$opts --argnum --run --in" ;;
    compile) opts="$opts --emit -o --name -O --no-fusion" ;;
    transform) opts="$opts --dump --name --in-shapes --run --in --out-dir" ;;
    opt) opts="$opts --tier --explain --grad --argnums" ;;
    egraph) opts="$opts --iters --scheduler --node-limit --time-limit --memory-limit --explain --extract --rules-stats" ;;
    coverage) opts="$opts --strict --reasons" ;;
    cache) if [ "$COMP_CWORD" -eq 2 ]; then COMPREPLY=($(compgen -W "info clear" -- "$cur")); return; fi ;;
    help) COMPREPLY=($(compgen -W "$cmds" -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "$opts" -- "$cur"));
  else COMPREPLY=($(compgen -f -- "$cur")); fi
}

_ftledger() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "show verify replay reexec repair recover diff export merge help --help --version" -- "$cur")); return
  fi
  case $prev in
    --html|--dot|--records) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "--json --seq --kind --html --dot --records --help" -- "$cur"))
  else
    COMPREPLY=($(compgen -d -- "$cur"))
  fi
}

complete -F _ftc ftc
complete -F _ftledger ftledger
