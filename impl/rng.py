"""The kit's only source of randomness: SplitMix64 streams forked by label from one seed.

Python's ``random`` only promises a stable ``random()`` across versions; everything the kit draws must
replay byte for byte in any process and any Python >= 3.11, so the generator is written out here.
Independent streams (network, workload, faults, each node) are forked by name, so that adding draws to
one stream never shifts another.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")
_MASK = (1 << 64) - 1


class DetRng:
    """SplitMix64 (Steele, Lea, Flood 2014): tiny state, full period 2^64, good enough for simulation."""

    __slots__ = ("_state",)

    def __init__(self, seed: int) -> None:
        self._state = seed & _MASK

    def fork(self, label: str) -> DetRng:
        """An independent stream named ``label``; it does not advance this one."""
        digest = hashlib.sha256(f"{self._state}:{label}".encode()).digest()
        return DetRng(int.from_bytes(digest[:8], "big"))

    def next_u64(self) -> int:
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """Uniform in ``[0, n)`` by rejection (no modulo bias)."""
        if n <= 0:
            raise ValueError("below() needs n > 0")
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            x = self.next_u64()
            if x < limit:
                return x % n

    def between(self, lo: int, hi: int) -> int:
        """Uniform in ``[lo, hi]``."""
        return lo + self.below(hi - lo + 1)

    def unit(self) -> float:
        """Uniform in ``[0, 1)`` with 53 bits."""
        return (self.next_u64() >> 11) * (1.0 / (1 << 53))

    def chance(self, p: float) -> bool:
        return p > 0.0 and self.unit() < p

    def choice(self, items: Sequence[T]) -> T:
        return items[self.below(len(items))]

    def exp_ms(self, mean: int) -> int:
        """Exponentially distributed delay (ms, >= 1) with the given mean, by inversion."""
        u = self.unit()
        return max(1, int(-math.log(1.0 - u) * mean))

    def weighted(self, weights: Sequence[tuple[T, float]]) -> T:
        """Pick by relative weight; zero weights never win."""
        total = sum(w for _, w in weights if w > 0)
        if total <= 0:
            raise ValueError("weighted() needs a positive weight")
        x = self.unit() * total
        for item, w in weights:
            if w <= 0:
                continue
            if x < w:
                return item
            x -= w
        return next(item for item, w in reversed(weights) if w > 0)
