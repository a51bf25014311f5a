#!/usr/bin/env bash
# WRONG: mv replaces an existing target instead of warning and leaving the file alone.
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
  target="${f%."$from"}.$to"
  mv -- "$f" "$target"
  count=$((count + 1))
done < <(find "$dir" -type f -name "*.$from" -print0)
echo "$count"
exit "$status"
