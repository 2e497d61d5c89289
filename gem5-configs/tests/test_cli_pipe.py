"""The ``pimcloud`` command piped into a reader that stops early (``| head``)."""

from __future__ import annotations

import subprocess
import sys


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    """Its stdout's reader closes before the command writes: no error, no traceback, the
    shell's exit status of a SIGPIPE."""
    command = subprocess.Popen([sys.executable, "-m", "pimcloud.cli", "topology", "list"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert command.stdout is not None and command.stderr is not None
    command.stdout.close()
    said = command.stderr.read().decode()
    assert command.wait(timeout=60) == 141
    assert said == ""
