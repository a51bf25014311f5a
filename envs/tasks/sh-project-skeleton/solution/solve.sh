#!/usr/bin/env bash
# Reference solution: run with the workspace as the current directory.
set -eu
mkdir -p src docs bin
printf '#!/bin/sh\necho ok\n' > bin/run.sh
chmod +x bin/run.sh
printf '__version__ = "0.1.0"\n' > src/__init__.py
printf '# demo\n\nA demo project.\n' > docs/README.md
printf '__pycache__/\n*.log\n' > .gitignore
rm -f TODO.txt
