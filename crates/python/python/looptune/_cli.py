"""The `looptune` console script: the Rust command line, in this process."""

import sys

from . import _looptune


def main() -> None:
    sys.exit(_looptune.main(["looptune", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
