#!/usr/bin/env bash
# WRONG: echo without outer quotes drops the double quotes: __version__ = 0.1.0.
set -eu
mkdir -p src docs bin
printf '#!/bin/sh\necho ok\n' > bin/run.sh
chmod +x bin/run.sh
echo __version__ = "0.1.0" > src/__init__.py
printf '# demo\n\nA demo project.\n' > docs/README.md
printf '__pycache__/\n*.log\n' > .gitignore
rm -f TODO.txt
