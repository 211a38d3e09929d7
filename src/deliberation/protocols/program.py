"""A model's program, read from its reply and run: the code of a fenced block, its ``solve()`` run in the
project's sandbox (``benchmarks/sandbox``: isolated, no network, 30 s). AFlow's Programmer operator
(``protocols/aflow.py``) and AgentPrune's Programming Expert (``protocols/swarm.py``) run their code so.
"""

from __future__ import annotations

import re

_CODE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)
"""A fenced block untagged or tagged as Python in any of the ways models write it (py, Python, python3)."""
OUTPUT_MARK = "__program_output__"
_SHOW = ("import decimal as _decimal, re as _re\n"
         "_value = solve()\n"
         "_shown = repr(round(float(_value), 6)) if type(_value).__name__.startswith('float') else str(_value)\n"
         "if _re.fullmatch(r'-?[0-9.]+[eE][-+]?[0-9]+', _shown.strip()):\n"
         "    _shown = format(_decimal.Decimal(_shown.strip()), 'f')\n"
         "    _shown = _shown.rstrip('0').rstrip('.') if '.' in _shown else _shown\n"
         "print({mark!r} + _shown)")
"""What runs after the model's code: its ``solve()``'s value as text, a float rounded to 6 decimals (this
project scores a number exactly; ``7.000000000000001`` is shown as ``7.0``), and a number never in exponent
notation, whatever its type (a float, numpy's, sympy's ``Float``, a ``Decimal``: ``1e+16`` would be read as 16).
"""


def program_of(reply: str) -> str | None:
    """The code of ``reply``: its last fenced block that defines ``solve``, else its last fenced block (an
    output block the model shows after its code is not the program), or None."""
    blocks = _CODE.findall(reply)
    defining = [b for b in blocks if re.search(r"^\s*def solve\s*\(", b, re.MULTILINE)]
    return (defining or blocks or [None])[-1]


def run_solve(code: str) -> tuple[bool, str]:
    """Run ``code``'s ``solve()`` in the sandbox: (ran, its value as text) or (False, what went wrong)."""
    from deliberation.benchmarks.sandbox.run import Limits, run_program

    result = run_program(f"{code}\n{_SHOW.format(mark=OUTPUT_MARK)}", Limits(timeout_s=30.0))
    found = [line[len(OUTPUT_MARK):] for line in result.output.splitlines() if line.startswith(OUTPUT_MARK)]
    return (True, found[-1]) if result.passed and found else (False, result.output[-1000:] or result.status)
