"""Command line: parse arguments, call the API, print. Nothing else.

One module per group of commands; importing one registers its commands on :func:`main`, which
imports each when it is first asked for (``cli.common.COMMAND_MODULES``).
Exit codes (a stable interface): 0 no error-level findings, 1 error-level findings (or warnings
with ``--strict``; nothing fits), 2 unusable input (files, specs, templates, settings, output),
3 AWS refused or an endpoint failed (deploy).
"""

from __future__ import annotations

from lmi_config.cli.common import main

__all__ = ["main"]

if __name__ == "__main__":  # pragma: no cover
    main()
