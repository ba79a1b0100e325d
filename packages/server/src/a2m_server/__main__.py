"""``python -m a2m_server``: the same command line as the ``a2m-server`` script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
