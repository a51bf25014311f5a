#!/usr/bin/env bash
# WRONG: bin/run.sh has no #! line, so executing it directly fails (Exec format error).
set -eu
mkdir -p src docs bin
echo 'echo ok' > bin/run.sh
chmod +x bin/run.sh
printf '__version__ = "0.1.0"\n' > src/__init__.py
printf '# demo\n\nA demo project.\n' > docs/README.md
printf '__pycache__/\n*.log\n' > .gitignore
rm -f TODO.txt
