"""Testbed backends: how a run's network and hosts come to exist."""
