"""AFlow's workflows for GSM8K and MATH as fixed methods, transferred from the paper, not searched here
(``protocols/aflow.py``): ``aflow-gsm8k`` and ``aflow-math``, each usable on any benchmark."""

from __future__ import annotations

from dataclasses import replace

from deliberation.engine.spec import MethodSpec
from deliberation.methods.base import fixed
from deliberation.protocols.aflow import workflow_episode


def transferred(found_on: str):
    return fixed(MethodSpec(name=f"aflow-{found_on}", policy=None, protocol=found_on),
                 engine=lambda e: replace(e, agents=1, rounds=0), episode=workflow_episode)


GSM8K = transferred("gsm8k")
MATH = transferred("math")
