"""The paired experiment's commitments as a file, and the check every look makes against it.

PREREGISTRATION.md's amendment 5 names, by role, the files a look may use: the primary arm's checkpoint
(``policy``), the SFT arm's (``sft``), the best rule (``rule``, best_rule.json), CISC's temperatures
(``votes``, vote_temperatures.json) and the block sizes (``block``: GSM8K test and MATH-500 questions a block
adds). ``write`` hashes them into ``registered.json`` (``experiments/paired_prepare.sh`` does, and the
file is committed with the amendment); ``check`` refuses a look whose files differ from it in any role,
so no look can run a policy, rule or temperature chosen after the registration, or swap two roles;
``block`` prints the registered block sizes (the looks' default).

    python experiments/registered.py write REGISTERED_JSON policy=CKPT sft=CKPT rule=FILE votes=FILE block=G,M
    python experiments/registered.py check REGISTERED_JSON ROLE=VALUE ...
    python experiments/registered.py block REGISTERED_JSON

A checkpoint is a path or a shipped checkpoint's name (``--policy`` reads it the same way; a path into the
package's checkpoints is recorded by its name). Every refusal is one line and exit status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from deliberation.errors import DelibError, exit_status
from deliberation.files import write_json_atomic
from deliberation.policy.shipped import SHIPPED, checkpoint_path, sha256_hex

CHECKPOINT_ROLES = ("policy", "sft")
FILE_ROLES = (*CHECKPOINT_ROLES, "rule", "votes")
"""The roles whose value is a file, committed by its sha256."""
ROLES = (*FILE_ROLES, "block")
USAGE = ("usage: python experiments/registered.py write|check REGISTERED_JSON ROLE=VALUE ... | "
         "block REGISTERED_JSON")


def entry(role: str, value: str) -> dict[str, Any]:
    """What the registration holds for ``role``: a file's name and sha256, or the block sizes."""
    if role not in ROLES:
        raise DelibError(f"unknown role {role!r}; the roles are {', '.join(ROLES)}")
    if role == "block":
        return {"sizes": block_sizes(value)}
    path = checkpoint_path(value) if role in CHECKPOINT_ROLES else Path(value)
    if not path.is_file():
        raise DelibError(f"{role} {value} not found; restore it (git checkout -- {value}) or name the file")
    shipped = role in CHECKPOINT_ROLES and path.resolve().parent == SHIPPED
    return {"file": path.stem if shipped else value, "sha256": sha256_hex(path)}


def block_sizes(value: str) -> list[int]:
    """``G,M`` as two positive counts, or a DelibError."""
    parts = [part.strip() for part in value.split(",")]
    if len(parts) != 2 or not all(part.isdecimal() and int(part) > 0 for part in parts):
        raise DelibError(f"block {value!r} is not two positive counts GSM8K,MATH (e.g. 100,50)")
    return [int(part) for part in parts]


def parse(pairs: list[str]) -> dict[str, str]:
    """``ROLE=VALUE`` arguments by role; a role given twice or without ``=`` is refused."""
    given: dict[str, str] = {}
    for pair in pairs:
        role, sep, value = pair.partition("=")
        if not sep or role in given:
            raise DelibError(f"{pair!r}: give each role once as ROLE=VALUE ({', '.join(ROLES)})")
        given[role] = value
    return given


def read(registered: Path) -> dict[str, dict[str, Any]]:
    """registered.json, each role's entry of the shape ``entry`` writes, or a DelibError naming the file."""
    try:
        record = json.loads(registered.read_text())
    except (OSError, ValueError) as err:
        raise DelibError(f"registration {registered} cannot be read ({err}); restore it (git checkout -- "
                         f"{registered}) or name another (the scripts' REGISTRATION=FILE)") from err
    for role in ROLES:
        want = record.get(role) if isinstance(record, dict) else None
        key = "sizes" if role == "block" else "sha256"
        if not isinstance(want, dict) or key not in want:
            raise DelibError(f"registration {registered} has no {role} {key}; rewrite it with "
                             "`experiments/registered.py write`")
    return record


def check(registered: Path, given: dict[str, str]) -> list[str]:
    """One line per role checked; a DelibError names the first role that differs from ``registered``."""
    record, lines = read(registered), []
    for role, value in given.items():
        got = entry(role, value)  # refuses an unknown role first
        want = record[role]
        key = "sizes" if role == "block" else "sha256"
        if want[key] != got[key]:
            named = f"{want['file']}, " if "file" in want else ""
            raise DelibError(f"{role} {value} ({key} {got[key]}) is not the registered {role} ({named}{key} "
                             f"{want[key]}, {registered}): a look runs only what an amendment committed before it")
        lines.append(f"{role}: {value} ({key} {got[key]}) registered")
    return lines


def write(registered: Path, given: dict[str, str]) -> None:
    """registered.json of every role (a registration naming some roles only is refused)."""
    if set(given) != set(ROLES):
        raise DelibError(f"a registration names every role ({', '.join(ROLES)}); missing: "
                         f"{', '.join(r for r in ROLES if r not in given) or 'none'}")
    write_json_atomic(registered, {role: entry(role, value) for role, value in given.items()})


def main(argv: list[str]) -> None:
    if argv[:1] == ["block"] and len(argv) == 2:
        print(*read(Path(argv[1]))["block"]["sizes"])
    elif argv[:1] in (["write"], ["check"]) and len(argv) >= 3:
        given = parse(argv[2:])
        if argv[0] == "write":
            write(Path(argv[1]), given)
            print(f"-> {argv[1]}")
        else:
            print("\n".join(check(Path(argv[1]), given)))
    else:
        raise DelibError(USAGE)


if __name__ == "__main__":
    sys.exit(exit_status(lambda: main(sys.argv[1:])))
