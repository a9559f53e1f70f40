"""The `ember` console script and `python3 -m ember`: runs the command line shipped in the
package (ember/_native/ember) with the same arguments."""
import os
import sys

from ._native import cli_path


def main():
    cli = cli_path()
    try:
        os.execv(cli, [cli] + sys.argv[1:])
    except OSError as e:
        sys.exit(f"ember: cannot run {cli}: {e}")
