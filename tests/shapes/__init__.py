"""The container shapes CI runs the integration tests in again (issue #33, point 6): a
launcher that makes them (``launcher.py``) and the tests that pin what each shape is."""
