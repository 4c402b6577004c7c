"""Turning a run's raw agent logs into metrics (`metrics`: the formulas) and reports (`run`)."""
