#!/usr/bin/env bash
# WRONG: $dir is not quoted, so a directory whose path has a space breaks (word splitting).
set -u
if [ $# -ne 2 ] || [ ! -d "$1" ] || ! [[ $2 =~ ^[0-9]+$ ]]; then
  echo "usage: rotate.sh DIR N" >&2
  exit 2
fi
dir=$1 keep=$2
for f in $(ls $dir | grep -E '^backup-[0-9]{4}-[0-9]{2}-[0-9]{2}\.tar\.gz$' | sort | head -n -$keep); do
  [ -f $dir/$f ] || continue
  rm -f $dir/$f
  echo $f
done
