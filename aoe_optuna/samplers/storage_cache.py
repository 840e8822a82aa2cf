"""A cache keyed by a study's storage that pickles empty.

Samplers keep what they have read of finished trials per storage, so that a
suggestion does not re-read a thousand trials. Weak keys drop a storage's
entries with it; weak references do not pickle, and a copied sampler (Optuna
pickles samplers for its workers) refills the cache from storage anyway.
"""

from __future__ import annotations

import weakref
from typing import Any, TypeVar

V = TypeVar("V")


class StorageCache(weakref.WeakKeyDictionary[Any, V]):
    """``WeakKeyDictionary`` whose copies (pickled or deep) start empty."""

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (type(self), ())

    def __deepcopy__(self, memo: dict[int, Any]) -> StorageCache[V]:
        return type(self)()
