"""Hooks: ordered before / after interceptors that allow, deny or patch a call (000 §5).

The package owns the decision values, patch normalisation and conflict rules, the
shapes a patched event must keep (``shapes``), the hook specs and matchers, the
runner port, and the threads synchronous hooks run on (``threads``). It does not
commit anything: the pipeline commits each accepted decision with its change set
and chain cursor.
"""
