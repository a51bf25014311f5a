"""Summarise a CSV of amounts per category (see the task instructions)."""
import sys


def main(argv):
    raise NotImplementedError


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
