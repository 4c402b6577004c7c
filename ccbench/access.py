"""Who may do what, as names every app shares (stdlib only, so the CLI loads it without the
database layer): a token's scope, and how a team reads a resource. What they mean is enforced
by ccbench.teams (scopes) and ccbench.sharing (grants)."""

from enum import StrEnum


class Scope(StrEnum):
    """What a token may do: `read` reads; `write` also submits and changes the team's
    experiments and its host inventory; `admin` also manages the team's tokens and shares its
    resources with other teams."""

    read = "read"
    write = "write"
    admin = "admin"

    def allows(self, needed: "Scope") -> bool:
        order = list(Scope)
        return order.index(self) >= order.index(needed)


class Access(StrEnum):
    """How a team reads a resource: its own, shared with it by name, or public."""

    own = "own"
    shared = "shared"
    public = "public"
