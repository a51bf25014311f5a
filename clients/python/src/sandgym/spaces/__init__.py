"""Protocol spaces: validation, and conversion to ``gymnasium.spaces``.

A protocol space is a dict tagged by ``"type"`` (see PROTOCOL.md). This module offers:

* :func:`check_space` -- pure Python, mirrors the protocol's semantics (the same rules the server
  applies to actions). Returns ``None`` when the value is in the space, else ``{"path", "reason"}``
  with ``path`` a JSON pointer into the value. No dependency.
* :func:`to_gym_space` -- the matching ``gymnasium.spaces.Space`` (needs the ``gymnasium`` extra):

  ===================  ==================================================================
  protocol             gymnasium
  ===================  ==================================================================
  box                  ``Box`` (``"inf"`` bounds -> ``np.inf``; integer dtypes clamp
                       infinite bounds to the dtype's range)
  discrete             ``Discrete(n, start=start)``
  multi_discrete       ``MultiDiscrete(nvec, start=start)``
  multi_binary         ``MultiBinary(n)``
  text                 :class:`CharsetText` (gymnasium's ``Text``, with ``charset``);
                       without a charset :class:`UnicodeText` (a ``Text`` whose charset
                       is every code point, U+0000..U+10FFFF, computed rather than
                       stored; ``contains`` accepts any ``str`` within the lengths).
                       Both work with ``flatten`` and gymnasium's vector envs, including
                       ``AsyncVectorEnv``'s shared memory (a reader is registered)
  dict                 ``Dict`` with the protocol's key order preserved
  tuple / sequence     ``Tuple`` / ``Sequence(stack=...)``
  one_of               ``OneOf`` (values are ``(index, value)`` tuples)
  json                 :class:`JsonSpace` -- any JSON value valid under ``schema``
  tool_call            :class:`ToolCallSpace` -- ``{"name": str, "arguments": dict}``
  ===================  ==================================================================

* :func:`from_wire` / :func:`to_wire` -- convert values between the wire form (lists, numbers) and
  the gymnasium form (numpy arrays of the space's dtype, tuples).

* :func:`validate_space_definition` -- is a space definition usable; :func:`validate_json_schema`
  -- the JSON Schema subset of ``json`` and ``tool_call`` spaces (keywords listed in
  :mod:`sandgym.spaces.json_schema`).

One module per responsibility, all re-exported here (import from ``sandgym.spaces``):
:mod:`~sandgym.spaces.check` (values), :mod:`~sandgym.spaces.definition` (definitions),
:mod:`~sandgym.spaces.json_schema` (the schema subset), :mod:`~sandgym.spaces.gym_spaces`
(gymnasium conversion), ``_util`` (pointers, number tests, dtype ranges).
"""

from __future__ import annotations

from ._util import Issue
from .check import check_space
from .definition import validate_space_definition
from .gym_spaces import UNICODE_SIZE, from_wire, is_gym_expressible, to_gym_space, to_wire
from .json_schema import validate_json_schema

try:
    from .gym_spaces import CharsetText, JsonSpace, ToolCallSpace, UnicodeText
except ImportError:  # without the gymnasium extra these classes do not exist; the rest works
    pass

__all__ = [
    "Issue",
    "check_space",
    "validate_space_definition",
    "validate_json_schema",
    "to_gym_space",
    "from_wire",
    "to_wire",
    "is_gym_expressible",
    "JsonSpace",
    "ToolCallSpace",
    "UnicodeText",
    "CharsetText",
    "UNICODE_SIZE",
]
