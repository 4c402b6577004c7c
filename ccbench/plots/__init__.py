"""Static figures (matplotlib, Agg backend) of a run and of a matrix comparison, built from the
API's JSON so the CLI can draw them for any server it talks to."""
