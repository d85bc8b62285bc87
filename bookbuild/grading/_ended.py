"""How a sandboxed run ended, in the words its feedback uses.

Example:
    >>> ended_how(ENDED + "137")
    'killed by SIGKILL (killed: often the machine ran out of memory)'
"""

from __future__ import annotations

import signal

from bookbuild.grading.sandbox import ENDED

SIGNALS = {
    "SIGABRT": " (an abort: native code such as TensorFlow gave up)",
    "SIGSEGV": " (a crash in native code)",
    "SIGKILL": " (killed: often the machine ran out of memory)",
    "SIGBUS": " (a crash in native code)",
}


def ended_how(log: str) -> str:
    """How the sandboxed runner ended, from its shell's last word (never another log line).

    Example:
        >>> ended_how("noise\\n" + ENDED + "134\\n")
        'killed by SIGABRT (an abort: native code such as TensorFlow gave up)'
        >>> ended_how(ENDED + "0")
        'it exited with status 0 before its check finished (os._exit or the like)'
    """
    said = [line for line in log.splitlines() if line.startswith(ENDED)]
    code = said[-1][len(ENDED) :].strip() if said else ""
    if not code.isdigit():
        return "it stopped without saying how (its process was killed from outside)"
    status = int(code)
    if status > 128:
        try:
            name = signal.Signals(status - 128).name
        except ValueError:
            name = f"signal {status - 128}"
        return f"killed by {name}{SIGNALS.get(name, '')}"
    return f"it exited with status {status} before its check finished (os._exit or the like)"
