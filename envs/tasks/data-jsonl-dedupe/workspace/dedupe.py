"""Deduplicate JSON Lines records by key (see the task instructions)."""
import sys


def main(argv):
    raise NotImplementedError


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
