"""Models: the gateway that turns one ModelRequest into one complete, validated ModelResponse.

The caller waits for a whole response; adapters underneath stream from the provider and
aggregate inside one Attempt (000 §4). No token delta leaves an adapter.
"""
