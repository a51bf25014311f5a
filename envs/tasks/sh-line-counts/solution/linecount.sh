#!/usr/bin/env bash
# Line counts of the .txt files under DIR (see the task instructions).
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
  printf '%s\n' "${lines[@]}" | LC_ALL=C sort -t ' ' -k1,1nr -k2
fi
echo "total $total"
