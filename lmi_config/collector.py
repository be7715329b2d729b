"""The garbage collector paused while the CLI's modules load (:mod:`lmi_config.launch`), and
turned back on once a command's modules are in (:mod:`lmi_config.cli.common`).

Importing the CLI and a command's modules creates tens of thousands of objects (functions,
classes, the rules), none of them garbage; with the collector on, each batch of allocations
triggers a pass, and later passes walk everything made so far. :func:`pause` stops that;
:func:`resume` moves what the imports made out of the collector's reach (``gc.freeze``) and turns
it back on, so the command itself runs with collection as usual.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop collecting until :func:`resume` (no-op when collection is already off)."""
    global _paused
    if gc.isenabled():
        _paused = True
        gc.disable()


def resume() -> None:
    """Collect again, as before :func:`pause` (no-op unless :func:`pause` turned it off)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
