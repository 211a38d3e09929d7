"""The paired experiment's analysis (docs/results/paired/PREREGISTRATION.md): a look's record from the reports
``delib report`` and ``delib compare`` wrote (``record``), its markdown (``markdown``), the action counts it
shows (``actions``) and the sequential stopping rule it is read under (``sequential``). Experiment code, kept
outside the package: the library computes paired statistics (``deliberation.report.paired``); what this
experiment registered on top of them lives here, beside the scripts that run it (``paired_look.py``,
``paired_look.sh``), which import it as ``looks``.
"""
