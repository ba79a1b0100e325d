"""``python -m a2m_a2e``: the ``a2m-a2e`` command line."""

from .cli import main

raise SystemExit(main())
