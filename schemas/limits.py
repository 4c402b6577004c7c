"""Lengths the models accept and the database columns hold: one number for both, so input
that validates always fits its column (ccbench/db/models.py sizes the columns from these)."""

NAME_MAX = 100  # an experiment's, a team's, a token's name
TAG_MAX = 64  # one tag
TAGS_MAX = 50  # tags per experiment
DESCRIPTION_MAX = 10_000
AXIS_PATH_MAX = 200  # a matrix axis's field path
IDEMPOTENCY_KEY_MAX = 200
FACET_VALUE_MAX = 200  # a spec value the listing filters on, as text (longer ones are not kept)
ID_LENGTH = 32  # every id: a UUID4 in hex (ccbench/db/models.py: new_id)
