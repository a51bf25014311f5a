#!/usr/bin/env bash
# WRONG: a globstar glob skips hidden files and directories (.notes.txt, .cache/x.txt)
set -u
shopt -s globstar nullglob
dir=${1:?usage: linecount.sh DIR}
total=0
lines=()
for f in "$dir"/**/*.txt; do
  [ -f "$f" ] || continue
  n=$(awk 'END { print NR }' "$f")
  total=$((total + n))
  lines+=("$n ${f#"$dir"/}")
done
if [ "${#lines[@]}" -gt 0 ]; then
  printf '%s\n' "${lines[@]}" | LC_ALL=C sort -t ' ' -k1,1nr -k2
fi
echo "total $total"
