#!/usr/bin/env bash
# Keep the N newest backup-YYYY-MM-DD.tar.gz files in DIR (see the task instructions).
set -u
if [ "$#" -ne 2 ] || [ ! -d "$1" ] || ! [[ "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: rotate.sh DIR N" >&2
  exit 2
fi
dir=$1 keep=$2
mapfile -t backups < <(find "$dir" -maxdepth 1 -type f -name 'backup-[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9].tar.gz' -printf '%f\n' | LC_ALL=C sort)
excess=$(( ${#backups[@]} - keep ))
for ((i = 0; i < excess; i++)); do
  rm -f -- "$dir/${backups[$i]}"
  echo "${backups[$i]}"
done
