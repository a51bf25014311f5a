#!/usr/bin/env bash
# WRONG: sorts the counts as text (reverse byte order), so 9 comes before 10 and ties come out path-descending
set -u
dir=${1:?usage: linecount.sh DIR}
total=0
lines=()
while IFS= read -r -d '' f; do
  n=$(awk 'END { print NR }' "$f")
  total=$((total + n))
  lines+=("$n ${f#"$dir"/}")
done < <(find "$dir" -type f -name '*.txt' -print0)
if [ "${#lines[@]}" -gt 0 ]; then
  printf '%s\n' "${lines[@]}" | LC_ALL=C sort -r
fi
echo "total $total"
