"""Measurement campaigns: when occurrences are due (`schedule`), which paths they measure
(`paths`), and firing each due occurrence exactly once (`firing`)."""
