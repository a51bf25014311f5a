#!/usr/bin/env bash
# WRONG: iterates over $(find ...), so file names with spaces are split into words.
# Rename *.FROM files under DIR to *.TO (see the task instructions).
set -u
if [ "$#" -ne 3 ] || [ ! -d "$1" ]; then
  echo "usage: rename_ext.sh DIR FROM TO" >&2
  exit 2
fi
dir=$1 from=$2 to=$3
count=0
status=0
for f in $(find "$dir" -type f -name "*.$from"); do
  target="${f%."$from"}.$to"
  if [ -e "$target" ]; then
    echo "skipping $f: $target exists" >&2
    status=1
    continue
  fi
  mv -- "$f" "$target"
  count=$((count + 1))
done
echo "$count"
exit "$status"
