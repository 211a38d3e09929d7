"""report/columns.py: fixed-width text columns whose widths come from the names they hold."""

from __future__ import annotations

from deliberation import methods
from deliberation.report.columns import GAP, method_column, text_table

LONGEST = max(methods.METHODS, key=len)


def test_the_longest_registered_method_name_keeps_a_gap_before_the_next_column():
    assert method_column(LONGEST) == LONGEST + " " * GAP  # "agreement-then-confidencemath/train" before
    assert {len(method_column(name)) for name in methods.METHODS} == {len(LONGEST) + GAP}


def test_a_text_table_is_as_wide_as_its_widest_cells_with_numbers_aligned_right():
    lines = text_table([["method", "n"], [LONGEST, "300"], ["cot", "7"]], right=(1,)).splitlines()
    assert lines == [f"{'method':<{len(LONGEST)}}    n", f"{LONGEST}  300", f"{'cot':<{len(LONGEST)}}    7"]
    assert text_table([["a", "b"], ["ccc", ""]]).splitlines() == ["a    b", "ccc"]  # no trailing spaces
