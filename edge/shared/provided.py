"""``Provided[T]``: a route handler's parameter that Litestar's dependency injection fills with
the edge's own object (registered with ``Provide`` by the app), taken as it is: Litestar would
otherwise try to validate it as request data, which these objects are not.
"""

from __future__ import annotations

from typing import Annotated, TypeVar

from litestar.params import Dependency

T = TypeVar("T")

Provided = Annotated[T, Dependency(skip_validation=True)]

__all__ = ["Provided"]
