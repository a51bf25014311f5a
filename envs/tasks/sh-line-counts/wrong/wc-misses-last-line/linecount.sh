#!/usr/bin/env bash
# WRONG: wc -l counts newlines, so a last line without a trailing newline is not counted
set -u
dir=${1:?usage: linecount.sh DIR}
total=0
lines=()
while IFS= read -r -d '' f; do
  n=$(wc -l < "$f")
  total=$((total + n))
  lines+=("$n ${f#"$dir"/}")
done < <(find "$dir" -type f -name '*.txt' -print0)
if [ "${#lines[@]}" -gt 0 ]; then
  printf '%s\n' "${lines[@]}" | LC_ALL=C sort -t ' ' -k1,1nr -k2
fi
echo "total $total"
