"""The paired experiment's commitments as a file, and the check every look makes against it.

PREREGISTRATION.md's amendment 5 names, by role, the files a look may use: the primary arm's checkpoint
(``policy``), the SFT arm's (``sft``), the best rule (``rule``, best_rule.json), CISC's temperatures
(``votes``, vote_temperatures.json) and the block sizes (``block``: GSM8K test and MATH-500 questions a block
adds). ``write`` hashes them into ``registered.json`` (``experiments/paired_prepare.sh`` does, and the
file is committed with the amendment); ``check`` refuses a look whose files differ from it in any role,
so no look can run a policy, rule or temperature chosen after the registration, or swap two roles.

    python experiments/registered.py write REGISTERED_JSON ROLE=VALUE ...
    python experiments/registered.py check REGISTERED_JSON ROLE=VALUE ...

A file role's VALUE is a path, or for ``policy`` and ``sft`` a shipped checkpoint's name (``--policy`` reads
it the same way); ``block``'s is two counts, ``100,50``. ``check`` exits 0 and prints what it checked, or
exits 2 with one line naming the first role that differs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from deliberation.errors import DelibError
from deliberation.policy.shipped import checkpoint_path, sha256_hex
from deliberation.types import write_json_atomic

FILE_ROLES = ("policy", "sft", "rule", "votes")
"""The roles whose value is a file, committed by its sha256."""
ROLES = (*FILE_ROLES, "block")


def entry(role: str, value: str) -> dict[str, object]:
    """What the registration holds for ``role``: a file's name and sha256, or the block sizes."""
    if role not in ROLES:
        raise DelibError(f"unknown role {role!r}; the roles are {', '.join(ROLES)}")
    if role == "block":
        sizes = [int(x) for x in value.split(",") if x.strip().isdigit()]
        if len(sizes) != 2 or min(sizes) < 1:
            raise DelibError(f"block {value!r} is not two positive counts (GSM8K,MATH), e.g. 100,50")
        return {"sizes": sizes}
    path = checkpoint_path(value) if role in ("policy", "sft") else Path(value)
    if not path.is_file():
        raise DelibError(f"{role} {value} not found")
    return {"file": value, "sha256": sha256_hex(path)}


def parse(pairs: list[str]) -> dict[str, str]:
    """``ROLE=VALUE`` arguments by role; a role given twice or without ``=`` is refused."""
    given: dict[str, str] = {}
    for pair in pairs:
        role, sep, value = pair.partition("=")
        if not sep or role in given:
            raise DelibError(f"{pair!r}: give each role once as ROLE=VALUE ({', '.join(ROLES)})")
        given[role] = value
    return given


def check(registered: Path, given: dict[str, str]) -> list[str]:
    """One line per role checked; a DelibError names the first role that differs from ``registered``."""
    try:
        record = json.loads(registered.read_text())
    except (OSError, ValueError) as err:
        raise DelibError(f"registration {registered} cannot be read ({err}); pass REGISTRATION=FILE") from err
    lines = []
    for role, value in given.items():
        want, got = record.get(role), entry(role, value)
        if want is None:
            raise DelibError(f"{registered} registers no {role}; a look uses only registered roles")
        key = "sizes" if role == "block" else "sha256"
        if want[key] != got[key]:
            raise DelibError(f"{role} {value} ({key} {got[key]}) is not the registered {role} ({want.get('file', '')} "
                             f"{want[key]}, {registered}): a look runs only what an amendment committed before it")
        lines.append(f"{role}: {value} ({key} {got[key]}) registered")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in ("write", "check"):
        print("usage: python experiments/registered.py write|check REGISTERED_JSON ROLE=VALUE ...", file=sys.stderr)
        return 2
    try:
        given = parse(argv[2:])
        if argv[0] == "write":
            write_json_atomic(Path(argv[1]), {role: entry(role, value) for role, value in given.items()})
            print(f"-> {argv[1]}")
        else:
            print("\n".join(check(Path(argv[1]), given)))
    except DelibError as err:
        print(err, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
