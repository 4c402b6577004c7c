"""Testbed backends: how a run's network and hosts come to exist (workers.testbeds.registry
picks one). Nothing is imported here: the sandbox imports workers.testbeds.mininet under the
system Python, which has only the standard library and Mininet."""
