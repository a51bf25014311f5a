#!/usr/bin/env bash
# WRONG: both .gitignore entries end up on one line, separated by a space.
set -eu
mkdir -p src docs bin
printf '#!/bin/sh\necho ok\n' > bin/run.sh
chmod +x bin/run.sh
printf '__version__ = "0.1.0"\n' > src/__init__.py
printf '# demo\n\nA demo project.\n' > docs/README.md
echo '__pycache__/ *.log' > .gitignore
rm -f TODO.txt
