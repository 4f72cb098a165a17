"""The `pooch` command and `python -m pooch`: replace this Python with the bundled pooch binary.

exec, not a child process: the binary finds libpooch.so from its own path (/proc/self/exe), and
the command `pooch run` starts is then this process, so its exit status and signals are the
caller's with no Python left in between.
"""

import os
import sys

from pooch import binary_path


def main():
    binary = binary_path()
    try:
        os.execv(binary, ["pooch"] + sys.argv[1:])
    except OSError as e:
        print("pooch: cannot run %s: %s" % (binary, e.strerror), file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main())
