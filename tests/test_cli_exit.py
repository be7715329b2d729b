"""How a command ends its process: the garbage collector's passes at interpreter exit are skipped
(``gc.freeze()`` in an exit handler) when the command line is the program, and only then."""

from __future__ import annotations

import subprocess
import sys

# registered before lmi-config's own handler, so it runs after it (exit handlers run last-in, first-out)
_REPORT_FROZEN = (
    "import atexit, gc, os\n"
    "atexit.register(lambda: os.write(1, b'frozen objects at exit: %d\\n' % gc.get_freeze_count()))\n"
    "from lmi_config.cli import main\n"
)


def _frozen_at_exit(call: str) -> tuple[int, int]:
    """(exit code, objects frozen when the last exit handler ran) of a fresh interpreter making ``call``."""
    completed = subprocess.run(
        [sys.executable, "-c", _REPORT_FROZEN + call], capture_output=True, text=True, timeout=60
    )
    frozen = int(completed.stdout.rsplit("frozen objects at exit: ", 1)[1])
    return completed.returncode, frozen


def test_a_command_run_as_the_program_freezes_the_collector_at_exit() -> None:
    exit_code, frozen = _frozen_at_exit("main(['--version'])")
    assert exit_code == 0
    assert frozen > 0


def test_a_caller_that_keeps_running_keeps_its_collection_at_exit() -> None:
    exit_code, frozen = _frozen_at_exit("main(['--version'], standalone_mode=False)")
    assert exit_code == 0
    assert frozen == 0


def test_standalone_mode_given_by_position_is_read_as_well() -> None:
    exit_code, frozen = _frozen_at_exit("main(['--version'], None, None, False)")
    assert exit_code == 0
    assert frozen == 0
