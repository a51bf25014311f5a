#!/usr/bin/env bash
# WRONG: the glob backup-*.tar.gz also takes backup-latest.tar.gz, odd names and directories.
set -u
if [ "$#" -ne 2 ] || [ ! -d "$1" ] || ! [[ "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: rotate.sh DIR N" >&2
  exit 2
fi
dir=${1%/} keep=$2
shopt -s nullglob
backups=()
for f in "$dir"/backup-*.tar.gz; do
  backups+=("${f##*/}")
done
excess=$(( ${#backups[@]} - keep ))
for ((i = 0; i < excess; i++)); do
  rm -rf -- "$dir/${backups[$i]}"
  echo "${backups[$i]}"
done
