"""Ctrl-C, SIGTERM and SIGHUP while deploy creates or removes resources.

Python turns Ctrl-C into :class:`KeyboardInterrupt`, but SIGTERM (``kill``, a CI job cancelled,
``docker stop``) and SIGHUP (the terminal closed) end the process at once: whatever the run had
created would stay, unlisted. While resources are being made, those two raise :class:`Interrupted`
instead, so the run rolls back what it made (newest first) and says what it could not remove.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_CAUGHT = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Interrupted(BaseException):
    """A termination signal arrived (a BaseException, like KeyboardInterrupt: nothing swallows it)."""

    def __init__(self, signal_number: int) -> None:
        super().__init__(signal.Signals(signal_number).name)
        self.signal_number = signal_number


INTERRUPTIONS: tuple[type[BaseException], ...] = (KeyboardInterrupt, Interrupted)


def signal_of(interruption: BaseException) -> int:
    """The signal behind an interruption (Ctrl-C is SIGINT)."""
    return interruption.signal_number if isinstance(interruption, Interrupted) else int(signal.SIGINT)


def _raise(signal_number: int, frame: FrameType | None) -> None:
    raise Interrupted(signal_number)


@contextmanager
def termination_raises() -> Iterator[None]:
    """Within the block SIGTERM and SIGHUP raise :class:`Interrupted`, unless the process ignores
    them (main thread only: Python delivers signals there, and another thread may not install handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # a signal the caller ignores stays ignored: under nohup a closed terminal must not roll back
    wanted = [number for number in _CAUGHT if signal.getsignal(number) is not signal.SIG_IGN]
    previous = {number: signal.signal(number, _raise) for number in wanted}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
