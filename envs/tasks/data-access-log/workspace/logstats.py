"""Access log statistics (see the task instructions)."""
import sys


def parse_line(line):
    raise NotImplementedError


def main():
    raise NotImplementedError


if __name__ == "__main__":
    sys.exit(main())
