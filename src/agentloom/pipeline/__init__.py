"""The invocation pipeline: the recorded phases every capability call goes through (000 §3)."""
