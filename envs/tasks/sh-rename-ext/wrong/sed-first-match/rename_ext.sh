#!/usr/bin/env bash
# WRONG: sed replaces the first ".FROM" in the path, which may be a directory name or an inner extension.
# Rename *.FROM files under DIR to *.TO (see the task instructions).
set -u
if [ "$#" -ne 3 ] || [ ! -d "$1" ]; then
  echo "usage: rename_ext.sh DIR FROM TO" >&2
  exit 2
fi
dir=$1 from=$2 to=$3
count=0
status=0
while IFS= read -r -d '' f; do
  target=$(printf '%s' "$f" | sed "s/\\.$from/.$to/")
  if [ -e "$target" ]; then
    echo "skipping $f: $target exists" >&2
    status=1
    continue
  fi
  mv -- "$f" "$target"
  count=$((count + 1))
done < <(find "$dir" -type f -name "*.$from" -print0)
echo "$count"
exit "$status"
