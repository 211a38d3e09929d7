"""Plain-text tables for the terminal, in fixed-width columns computed from the names they hold.

A column as wide as a guessed name ran into the next one ("agreement-then-confidencemath/train" in `delib
evaluate`'s lines); here every width comes from the cells (``text_table``) or, for lines printed one at a
time, from the longest registered method name (``method_column``).
"""

from __future__ import annotations

from typing import Container, Sequence

from deliberation import methods

GAP = 2  # spaces between two columns


def method_column(name: str) -> str:
    """``name`` padded to the longest registered method name, then the gap: lines printed one at a time
    (before the next method has run) line up whatever method each names."""
    return name.ljust(max(map(len, methods.METHODS))) + " " * GAP


def text_table(rows: Sequence[Sequence[str]], right: Container[int] = ()) -> str:
    """``rows`` of cells as lines of fixed-width columns, each as wide as its widest cell, ``GAP`` spaces apart;
    the columns whose index is in ``right`` aligned right (numbers), the others left. Trailing spaces are cut."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join((" " * GAP).join(cell.rjust(w) if i in right else cell.ljust(w)
                                      for i, (cell, w) in enumerate(zip(row, widths))).rstrip() for row in rows)
