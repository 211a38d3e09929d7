"""Progressive-Hint Prompting (Zheng et al. 2023; ``protocols/php.py``): one agent re-asked with its earlier
answers as hints until two consecutive answers agree, at most ``--php-max-calls`` interactions."""

from __future__ import annotations

from dataclasses import replace

from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import Method
from deliberation.methods.calls import Calls
from deliberation.protocols.php import php_episode

METHOD = Method(spec=lambda cfg: MethodSpec(name="php", policy=None, protocol=cfg.php_max_calls),
                engine=lambda e: replace(e, agents=1, rounds=0), options=frozenset({"php_max_calls"}),
                episode=php_episode, tree_requests=False,
                pinned_shown=(("rounds", "hinted calls until two answers agree, at most --php-max-calls"),),
                calls=lambda cfg: Calls((2, cfg.php_max_calls)),  # the base answer and at least one hinted one
                about="re-asks with its earlier answers as hints until two agree, at most --php-max-calls "
                "(Zheng et al. 2023)")
