"""Fresh random seeds for the seeded procedures (study designs, random co-occurrence draws).

Every seeded procedure records the seed it used (study config, manifest, build statistics),
so a run can be repeated; when the user gives none, one is drawn here, in one range
everywhere: short enough to read out and type again.
"""

from __future__ import annotations

import secrets

SEED_MAX = 999_999


def new_seed() -> int:
    """A fresh seed in 1..:data:`SEED_MAX` from the operating system's randomness.

    >>> 1 <= new_seed() <= SEED_MAX
    True
    """
    return 1 + secrets.randbelow(SEED_MAX)
