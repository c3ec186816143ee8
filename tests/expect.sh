# expect.sh: the checks of the CLI shell tests (sourced): counters n (checks) and fails.
fails=0
n=0
# expect CODE REGEX CMD...: runs CMD, checks its exit code and that its output matches REGEX (grep -E)
expect() {
  local code=$1 re=$2
  shift 2
  n=$((n + 1))
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" != "$code" ] || ! grep -qE -- "$re" <<<"$out"; then
    echo "FAIL: $* -> exit $rc (want $code), output:"
    echo "$out" | head -5 | sed 's/^/    /'
    echo "  (wanted /$re/)"
    fails=$((fails + 1))
  fi
}
check() {  # check DESCRIPTION TEST...
  local what=$1
  shift
  n=$((n + 1))
  if ! "$@"; then
    echo "FAIL: $what"
    fails=$((fails + 1))
  fi
}
# asset_dir FILE...: the first directory of the asset search path ($ADJOINT_ASSETS, ./assets, ../shared/assets)
# holding every FILE, printed; nothing (status 1) when none does
asset_dir() {
  local d f
  for d in "${ADJOINT_ASSETS:-}" assets ../shared/assets; do
    [ -n "$d" ] || continue
    for f in "$@"; do [ -f "$d/$f" ] || continue 2; done
    echo "$d"
    return 0
  done
  return 1
}
