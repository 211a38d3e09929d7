"""One rule for resuming an output (outputs/resume.py): what must match, what may change, what a later version
added, nested settings named by their path, and one refusal message for every output kind."""

from __future__ import annotations

import pytest

from deliberation.errors import DelibError
from deliberation.outputs.resume import SHOWN_WIDTH, ResumeRule, check_resume
from deliberation.rl.rollout_files import ROLLOUT_RESUME
from deliberation.runs.directory import RUN_RESUME
from deliberation.trees.manifest import TREE_RESUME

SPEED = frozenset({"n_threads"})
RULE = ResumeRule(may_change=frozenset({"cache"}), added_later={"prompts": "standalone"},
                  nested={"engine": ResumeRule(added_later={"early_stop": True}),
                          "options": ResumeRule(may_change=SPEED, nested={"members": ResumeRule(may_change=SPEED)})})


def names(old, new, rule=RULE):
    return [name for name, _, _ in rule.differing(old, new)]


def test_settings_that_may_change_are_not_compared():
    assert names({"cache": "a", "seed": 0}, {"cache": "b", "seed": 0}) == []
    assert names({"cache": "a", "seed": 0}, {"cache": "b", "seed": 1}) == ["seed"]


def test_a_setting_added_later_reads_as_its_old_value_when_not_recorded():
    assert names({}, {"prompts": "standalone"}) == []
    assert names({}, {"prompts": "continuation"}) == ["prompts"]
    assert names({"engine": {}}, {"engine": {"early_stop": True}}) == []


def test_nested_settings_are_named_by_their_path_and_keep_their_own_rule():
    old = {"engine": {"temperature": 0.7}, "options": {"n_threads": 2, "members": [{"model": "a", "n_threads": 1}]}}
    new = {"engine": {"temperature": 0.5}, "options": {"n_threads": 8, "members": [{"model": "b", "n_threads": 4}]}}
    assert names(old, new) == ["engine.temperature", "options.members[0].model"]


def test_a_setting_not_recorded_reads_as_none():
    assert names({"policy": None}, {}) == []
    assert names({}, {"policy": "a.pt"}) == ["policy"]


def test_an_allow_list_compares_only_its_settings_in_its_order():
    rule = ResumeRule(compared=("b", "a"))
    assert names({"a": 1, "b": 1, "c": 1}, {"a": 2, "b": 2, "c": 2}, rule) == ["b", "a"]


def test_canonical_settings_are_equal_exactly_when_nothing_differs():
    old, new = {"seed": 0, "cache": "x"}, {"seed": 0, "prompts": "standalone", "cache": "y"}
    assert RULE.canonical(old) == RULE.canonical(new) and names(old, new) == []
    assert RULE.canonical(old) != RULE.canonical({**new, "seed": 1})


def test_the_refusal_is_one_line_with_short_values_shown_and_long_ones_named(tmp_path):
    long = ["q"] * SHOWN_WIDTH
    with pytest.raises(DelibError) as err:
        check_resume(tmp_path, "a run", {"seed": 0, "ids": long}, {"seed": 1, "ids": long[:2]}, RULE,
                     "use another --out")
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{tmp_path} holds a run with other settings (")
    assert "(ids, seed 0 there, 1 here); use another --out" in text


def test_matching_settings_pass(tmp_path):
    check_resume(tmp_path, "a run", {"seed": 0}, {"seed": 0, "cache": "z"}, RULE, "fix")


def test_a_run_may_change_its_threads_but_not_its_model():
    old = {"backend_options": {"model": "m", "n_threads": 2}, "concurrency": 1}
    assert names(old, {"backend_options": {"model": "m", "n_threads": 8}, "concurrency": 3}, RUN_RESUME) == []
    assert names(old, {"backend_options": {"model": "n", "n_threads": 2}}, RUN_RESUME) == ["backend_options.model"]


def test_a_collection_compares_only_the_engine_settings_that_change_an_episode():
    old = {"model": "m", "engine": {"temperature": 0.7, "max_tokens": 512, "prompts": "x"}}
    assert names(old, {**old, "engine": {**old["engine"], "prompts": "y"}}, ROLLOUT_RESUME) == []
    assert names(old, {**old, "engine": {**old["engine"], "temperature": 0.5}}, ROLLOUT_RESUME) == \
        ["engine.temperature"]
    assert names({**old, "selection": {"ids": None}}, old, ROLLOUT_RESUME) == ["selection"]


def test_a_tree_store_compares_what_changes_a_node_and_not_what_it_holds():
    old = {"model": "m", "temperature": 0.7, "samples": 6, "agents": 3}
    assert names(old, {**old, "samples": 12}, TREE_RESUME) == []
    assert names(old, {**old, "temperature": 0.5}, TREE_RESUME) == ["temperature"]
