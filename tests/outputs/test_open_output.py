"""A new output kind opens its folder with one call (outputs/resume.open_output): the folder is made, one
writer holds it, its settings are recorded once, and a resume under other settings is refused in one line."""

from __future__ import annotations

import json

import pytest

from deliberation.errors import DelibError
from deliberation.outputs.resume import ResumeRule, open_output

RULE = ResumeRule(may_change=frozenset({"limit"}))


def opened(folder, **settings):
    return open_output(folder, settings, RULE, "answer lengths", "use another folder", "settings.json")


def test_the_first_open_makes_the_folder_and_records_the_settings(tmp_path):
    folder = tmp_path / "new" / "lengths"
    opened(folder, seed=0, limit=2).release()
    assert json.loads((folder / "settings.json").read_text()) == {"seed": 0, "limit": 2}


def test_a_resume_may_change_what_the_rule_allows_and_nothing_else(tmp_path):
    opened(tmp_path, seed=0, limit=2).release()
    opened(tmp_path, seed=0, limit=4).release()  # further: allowed, and the record is the first one's
    assert json.loads((tmp_path / "settings.json").read_text())["limit"] == 2
    with pytest.raises(DelibError, match=r"holds answer lengths with other settings \(seed 0 there, 1 here\); "
                                         "use another folder") as err:
        opened(tmp_path, seed=1, limit=2)
    assert len(str(err.value).splitlines()) == 1


def test_one_writer_at_a_time_and_the_lock_is_freed_on_a_refusal(tmp_path):
    writer = opened(tmp_path, seed=0)
    with pytest.raises(DelibError, match="is being written by"):
        opened(tmp_path, seed=0)  # another writer holds it
    writer.release()
    with pytest.raises(DelibError, match="other settings"):
        opened(tmp_path, seed=1)
    opened(tmp_path, seed=0).release()  # the refused open left no lock behind


def test_a_damaged_record_is_one_line_naming_the_file(tmp_path):
    (tmp_path / "settings.json").write_text("[1, 2]")
    with pytest.raises(DelibError, match="settings.json holds a JSON list, not an object"):
        opened(tmp_path, seed=0)
