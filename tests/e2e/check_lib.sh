# Check helpers shared by the kubectl end-to-end scripts (sourced). Each check prints one PASS or
# FAIL line and counts it in $pass / $fail.
# shellcheck shell=bash

pass=0
fail=0
ok() {
  echo "PASS $1"
  pass=$((pass + 1))
}
bad() {  # name, wanted, output
  echo "FAIL $1"
  echo "    wanted: $2"
  echo "    got:"
  printf '%s\n' "$3" | head -40 | sed 's/^/      /'
  fail=$((fail + 1))
}
# expect NAME TEXT CMD...: the command's output (stdout and stderr) contains TEXT.
expect() {
  local name=$1 want=$2 out
  shift 2
  out=$("$@" 2>&1)
  if grep -qF -- "$want" <<<"$out"; then ok "$name"; else bad "$name" "$want" "$out"; fi
}
# expect_re NAME REGEX CMD...: some line of the output matches the extended REGEX.
expect_re() {
  local name=$1 want=$2 out
  shift 2
  out=$("$@" 2>&1)
  if grep -qE -- "$want" <<<"$out"; then ok "$name"; else bad "$name" "/$want/" "$out"; fi
}
# expect_not NAME TEXT CMD...: the output does not contain TEXT (and the command ran).
expect_not() {
  local name=$1 unwanted=$2 out
  shift 2
  out=$("$@" 2>&1)
  if ! grep -qF -- "$unwanted" <<<"$out"; then ok "$name"; else bad "$name" "no '$unwanted'" "$out"; fi
}
# expect_eq NAME VALUE CMD...: the output is exactly VALUE.
expect_eq() {
  local name=$1 want=$2 out
  shift 2
  out=$("$@" 2>&1)
  if [ "$out" = "$want" ]; then ok "$name"; else bad "$name" "exactly '$want'" "$out"; fi
}
