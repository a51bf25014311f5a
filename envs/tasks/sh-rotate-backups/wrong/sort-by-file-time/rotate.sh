#!/usr/bin/env bash
# WRONG: orders the backups by modification time instead of by the date in the name.
set -u
if [ "$#" -ne 2 ] || [ ! -d "$1" ] || ! [[ "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: rotate.sh DIR N" >&2
  exit 2
fi
dir=$1 keep=$2
mapfile -t backups < <(find "$dir" -maxdepth 1 -type f -name 'backup-[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9].tar.gz' -printf '%T@ %f\n' | sort -n | cut -d' ' -f2-)
excess=$(( ${#backups[@]} - keep ))
for ((i = 0; i < excess; i++)); do
  rm -f -- "$dir/${backups[$i]}"
  echo "${backups[$i]}"
done
